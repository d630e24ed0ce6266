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

// The tail both forms share: `core` (the Erf or Tanh) read only by
// 1 + core, then the products with x and 0.5 in either grouping. Returns the
// last node of the pattern, or nullptr.
Node* gelu_tail(Node& core, Value* x) {
  double c = 0;
  Node* add = only_reader(core.output(0), "Add");
  if (add == nullptr || !scalar_value(other_input(*add, core.output(0)), c) || !near(c, 1.0)) return nullptr;
  Node* mul1 = only_reader(add->output(0), "Mul");
  if (mul1 == nullptr) return nullptr;
  Value* partner = other_input(*mul1, add->output(0));
  Node* last = nullptr;
  if (partner == x) {
    Node* mul2 = only_reader(mul1->output(0), "Mul");  // (x * (1 + core)) * 0.5
    if (mul2 == nullptr || !scalar_value(other_input(*mul2, mul1->output(0)), c) || !near(c, 0.5)) return nullptr;
    last = mul2;
  } else if (partner != nullptr && scaled_by(partner, 0.5) == x && partner->uses().size() == 1) {
    last = mul1;  // (x * 0.5) * (1 + core)
  } else {
    return nullptr;
  }
  return x->dtype() == last->output(0)->dtype() ? last : nullptr;
}

bool replace_with_gelu(Node& core, Node& last, Value* x, const char* approximate, Rewriter& rw) {
  Node* gelu = rw.create(core, "Gelu", {x}, 1, {{"approximate", Attribute(approximate)}},
                                   rw.graph().unique_name(core.name() + "_gelu"));
  gelu->output(0)->set_type(last.output(0)->type());
  rw.replace(last, gelu->output(0));  // the pattern's nodes go with it
  return true;
}

// 0.5 x (1 + erf(x / sqrt 2)), rooted at the Erf.
class GeluErfRule final : public RewriteRule {
 public:
  std::string name() const override { return "gelu_erf"; }
  std::vector<std::string> root_ops() const override { return {"Erf"}; }
  bool apply(Node& erf, Rewriter& rw) override {
    if (erf.num_inputs() != 1) return false;
    const double root2 = std::sqrt(2.0);
    // erf's argument: x / sqrt(2) or x * (1 / sqrt(2)).
    Value* scaled = erf.input(0);
    const Node* div = scaled->producer();
    Value* x = nullptr;
    double c = 0;
    if (div != nullptr && div->op_type() == "Div" && scalar_value(div->input(1), c) && near(c, root2)) {
      x = div->input(0);
    } else {
      x = scaled_by(scaled, 1.0 / root2);
    }
    if (x == nullptr || scaled->uses().size() != 1) return false;
    Node* last = gelu_tail(erf, x);
    return last != nullptr && replace_with_gelu(erf, *last, x, "none", rw);
  }
};

// x^3 as Pow(x, 3), x * x * x or x * (x * x).
bool is_cube_of(const Value* v, const Value* x) {
  const Node* node = v != nullptr ? v->producer() : nullptr;
  if (node == nullptr || node->num_inputs() != 2 || v->uses().size() != 1) return false;
  double c = 0;
  if (node->op_type() == "Pow") return node->input(0) == x && scalar_value(node->input(1), c) && c == 3.0;
  if (node->op_type() != "Mul") return false;
  auto square = [&](const Value* s) {
    const Node* m = s->producer();
    return m != nullptr && m->op_type() == "Mul" && m->input(0) == x && m->input(1) == x && s->uses().size() == 1;
  };
  return (node->input(1) == x && square(node->input(0))) || (node->input(0) == x && square(node->input(1)));
}

// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), rooted at the Tanh.
class GeluTanhRule final : public RewriteRule {
 public:
  std::string name() const override { return "gelu_tanh"; }
  std::vector<std::string> root_ops() const override { return {"Tanh"}; }
  bool apply(Node& tanh, Rewriter& rw) override {
    if (tanh.num_inputs() != 1 || tanh.input(0)->uses().size() != 1) return false;
    Value* sum = scaled_by(tanh.input(0), 0.7978845608028654);
    const Node* add = sum != nullptr ? sum->producer() : nullptr;
    if (add == nullptr || add->op_type() != "Add" || add->num_inputs() != 2 || sum->uses().size() != 1) return false;
    for (int side = 0; side < 2; ++side) {
      Value* x = add->input(static_cast<size_t>(side));
      Value* term = add->input(static_cast<size_t>(1 - side));
      if (term->uses().size() != 1 || !is_cube_of(scaled_by(term, 0.044715), x)) continue;
      Node* last = gelu_tail(tanh, x);
      return last != nullptr && replace_with_gelu(tanh, *last, x, "tanh", rw);
    }
    return false;
  }
};

}  // namespace

GeluFusion::GeluFusion() : RewriteDriver("gelu_fusion", make_rules<GeluErfRule, GeluTanhRule>()) {}

}  // namespace weir
