#include "passes/simplify/common_subexpression_elimination.h"

#include <map>

#include "passes/graph_match.h"

namespace weir {

namespace {

bool attribute_equal(const Attribute& a, const Attribute& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case AttrType::kInt: return a.i() == b.i();
    case AttrType::kFloat: return a.f() == b.f();
    case AttrType::kString: return a.s() == b.s();
    case AttrType::kInts: return a.ints() == b.ints();
    case AttrType::kFloats: return a.floats() == b.floats();
    case AttrType::kStrings: return a.strings() == b.strings();
    case AttrType::kTensor: return a.t().bitwise_equal(b.t());
    default: return false;  // sub-graphs and tensor lists: not compared, never merged
  }
}

bool same_computation(const Node& a, const Node& b) {
  if (a.op_type() != b.op_type() || a.domain() != b.domain() || a.inputs() != b.inputs() ||
      a.num_outputs() != b.num_outputs() || a.attributes().size() != b.attributes().size() ||
      a.device() != b.device()) {
    return false;
  }
  for (size_t o = 0; o < a.num_outputs(); ++o) {
    if ((a.output(o) == nullptr) != (b.output(o) == nullptr)) return false;
  }
  for (const auto& [name, attr] : a.attributes()) {
    auto it = b.attributes().find(name);
    if (it == b.attributes().end() || !attribute_equal(attr, it->second)) return false;
  }
  return true;
}

}  // namespace

bool CommonSubexpressionElimination::run(Graph& graph, PassContext& context) {
  bool changed = false;
  const OpTrait never = OpTrait::kStateful | OpTrait::kSideEffects | OpTrait::kCollective;
  // Candidates bucketed by (op, first input); in topological order, so the
  // kept node of a pair always comes first and merges cascade downstream.
  std::map<std::pair<std::string, const Value*>, std::vector<Node*>> seen;
  for (Node* node : graph.topological_order()) {
    const OpSchema* schema = context.registry().find(node->op_type(), node->domain());
    if (schema == nullptr || (static_cast<uint32_t>(schema->traits()) & static_cast<uint32_t>(never)) != 0) continue;
    if (!node->control_inputs().empty() || !node->control_outputs().empty()) continue;
    const Value* first = node->num_inputs() > 0 ? node->input(0) : nullptr;
    std::vector<Node*>& bucket = seen[{node->op_type(), first}];
    Node* twin = nullptr;
    for (Node* candidate : bucket) {
      if (same_computation(*candidate, *node)) {
        twin = candidate;
        break;
      }
    }
    if (twin == nullptr) {
      bucket.push_back(node);
      continue;
    }
    // A graph output keeps its name: that node stays.
    bool names_output = false;
    for (Value* out : node->outputs()) names_output = names_output || (out != nullptr && is_graph_output(graph, out));
    if (names_output) continue;
    for (size_t o = 0; o < node->num_outputs(); ++o) {
      if (node->output(o) != nullptr && twin->output(o) != nullptr) graph.replace_all_uses(node->output(o), twin->output(o));
    }
    bool unused = true;
    for (Value* out : node->outputs()) unused = unused && (out == nullptr || out->uses().empty());
    if (unused) graph.remove_node(node);
    changed = true;
  }
  return changed;
}

}  // namespace weir
