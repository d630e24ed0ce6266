#include "passes/fusion/gelu_fusion.h"

#include <cmath>

#include "passes/graph_match.h"

namespace weir {

namespace {

bool near(double a, double b) { return std::abs(a - b) <= 1e-4 * std::abs(b); }

// x when `v` is x * c or c * x with c ≈ `factor`.
Value* scaled_by(const Value* v, double factor) {
  const Node* mul = v != nullptr ? v->producer() : nullptr;
  if (mul == nullptr || mul->op_type() != "Mul" || mul->num_inputs() != 2) return nullptr;
  double c = 0;
  if (scalar_value(mul->input(1), c) && near(c, factor)) return mul->input(0);
  if (scalar_value(mul->input(0), c) && near(c, factor)) return mul->input(1);
  return nullptr;
}

}  // namespace

bool GeluFusion::run(Graph& graph, PassContext&) {
  bool changed = false;
  const double root2 = std::sqrt(2.0);
  for (Node* erf : graph.nodes()) {
    if (erf->op_type() != "Erf" || !erf->domain().empty() || erf->num_inputs() != 1) continue;
    // erf's argument: x / sqrt(2) or x * (1 / sqrt(2)).
    Value* scaled = erf->input(0);
    const Node* div = scaled->producer();
    Value* x = nullptr;
    double c = 0;
    if (div != nullptr && div->op_type() == "Div" && scalar_value(div->input(1), c) && near(c, root2)) {
      x = div->input(0);
    } else {
      x = scaled_by(scaled, 1.0 / root2);
    }
    if (x == nullptr || scaled->uses().size() != 1) continue;
    // 1 + erf(...)
    Node* add = only_reader(erf->output(0), "Add");
    if (add == nullptr || !scalar_value(other_input(*add, erf->output(0)), c) || !near(c, 1.0)) continue;
    // Then the products with x and 0.5, in either grouping.
    Node* mul1 = only_reader(add->output(0), "Mul");
    if (mul1 == nullptr) continue;
    Value* partner = other_input(*mul1, add->output(0));
    Node* last = nullptr;
    if (partner == x) {
      Node* mul2 = only_reader(mul1->output(0), "Mul");  // (x * (1 + erf)) * 0.5
      if (mul2 == nullptr || !scalar_value(other_input(*mul2, mul1->output(0)), c) || !near(c, 0.5)) continue;
      last = mul2;
    } else if (partner != nullptr && scaled_by(partner, 0.5) == x && partner->uses().size() == 1) {
      last = mul1;  // (x * 0.5) * (1 + erf)
    } else {
      continue;
    }
    if (x->dtype() != last->output(0)->dtype()) continue;
    Node* gelu = graph.add_node("Gelu", {x}, 1, {{"approximate", Attribute("none")}}, graph.unique_name(erf->name() + "_gelu"));
    if (erf->device()) gelu->set_device(*erf->device());
    gelu->output(0)->set_type(last->output(0)->type());
    graph.replace_all_uses(last->output(0), gelu->output(0));
    changed = true;  // the pattern's nodes are unread now: DCE removes them
  }
  return changed;
}

}  // namespace weir
