#include "passes/fusion/conv_activation_fusion.h"

#include <unordered_set>

#include "passes/graph_match.h"

namespace weir {

bool ConvActivationFusion::run(Graph& graph, PassContext& context) {
  if (context.registry().find("FusedConv") == nullptr) return false;
  bool changed = false;
  // Nodes this run removed: the snapshot below may still list them (a node
  // an earlier pass added sits after its readers in insertion order).
  std::unordered_set<const Node*> removed;
  for (Node* relu : graph.nodes()) {
    if (removed.count(relu)) continue;
    if (relu->op_type() != "Relu" || !relu->domain().empty() || relu->num_inputs() != 1) continue;
    Value* y = relu->input(0);
    Node* conv = y != nullptr ? y->producer() : nullptr;
    if (conv == nullptr || conv->op_type() != "Conv" || !conv->domain().empty() || y->uses().size() != 1) continue;
    if (is_graph_output(graph, y)) continue;
    if (conv->device() != relu->device() || !conv->control_outputs().empty()) continue;
    std::map<std::string, Attribute> attributes = conv->attributes();
    attributes["activation"] = Attribute("Relu");
    Node* fused = graph.add_node("FusedConv", conv->inputs(), 1, attributes, graph.unique_name(conv->name() + "_relu"));
    if (conv->device()) fused->set_device(*conv->device());
    fused->output(0)->set_type(relu->output(0)->type());
    graph.replace_all_uses(relu->output(0), fused->output(0));
    removed.insert(relu);
    graph.remove_node(relu);
    removed.insert(conv);
    graph.remove_node(conv);
    changed = true;
  }
  return changed;
}

}  // namespace weir
