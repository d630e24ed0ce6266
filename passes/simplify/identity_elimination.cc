#include "passes/simplify/identity_elimination.h"

#include "passes/graph_match.h"

namespace weir {

namespace {

// Dropout is the identity without a training_mode input, or with a constant false one.
bool is_inference_dropout(const Node& node) {
  if (node.op_type() != "Dropout" || node.num_inputs() < 1) return false;
  if (node.num_outputs() > 1 && node.output(1) != nullptr && !node.output(1)->uses().empty()) return false;
  if (node.num_inputs() < 3 || node.input(2) == nullptr) return true;
  const Value* mode = node.input(2);
  return mode->is_constant() && mode->data().dtype() == DType::kBool && mode->data().num_elements() == 1 &&
         !mode->data().data<bool>()[0];
}

}  // namespace

bool IdentityElimination::run(Graph& graph, PassContext&) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (!node->domain().empty()) continue;
    if (node->op_type() != "Identity" && !is_inference_dropout(*node)) continue;
    Value* in = node->input(0);
    Value* out = node->output(0);
    if (in == nullptr || out == nullptr) continue;
    if (is_graph_output(graph, out)) continue;
    if (!node->control_outputs().empty() || !node->control_inputs().empty()) continue;
    // (A Dropout's mask output has no readers: is_inference_dropout checked.)
    graph.replace_all_uses(out, in);
    graph.remove_node(node);
    changed = true;
  }
  return changed;
}

}  // namespace weir
