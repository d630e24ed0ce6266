#include "passes/simplify/dead_code_elimination.h"

#include <algorithm>

namespace weir {

bool DeadCodeElimination::run(Graph& graph, PassContext& context) {
  bool changed = false;
  auto is_output = [&](const Value* v) {
    return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
  };
  // Reverse topological order: a node's readers are visited (and maybe
  // removed) before it, so one sweep removes whole dead chains.
  std::vector<Node*> order = graph.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    const OpSchema* schema = context.registry().find(node->op_type(), node->domain());
    if (schema == nullptr || has_trait(schema->traits(), OpTrait::kSideEffects)) continue;
    if (!node->control_outputs().empty()) continue;
    bool live = false;
    for (Value* out : node->outputs()) {
      if (out != nullptr && (!out->uses().empty() || is_output(out))) live = true;
    }
    if (live) continue;
    graph.remove_node(node);
    changed = true;
  }
  std::vector<Value*> constants = graph.constants();
  for (Value* constant : constants) {
    if (constant->uses().empty() && !is_output(constant)) {
      graph.remove_value(constant);
      changed = true;
    }
  }
  return changed;
}

}  // namespace weir
