#include "passes/simplify/dead_code_elimination.h"

#include "passes/graph_match.h"

namespace weir {

bool DeadCodeElimination::run(Graph& graph, PassContext& context) {
  bool changed = false;
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
      if (out != nullptr && (!out->uses().empty() || is_graph_output(graph, out))) live = true;
    }
    if (live) continue;
    graph.remove_node(node);
    changed = true;
  }
  std::vector<Value*> constants = graph.constants();
  for (Value* constant : constants) {
    if (constant->uses().empty() && !is_graph_output(graph, constant)) {
      graph.remove_value(constant);
      changed = true;
    }
  }
  return changed;
}

}  // namespace weir
