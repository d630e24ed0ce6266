#include "passes/precision/wide_output_fusion.h"

#include "core/type_inference.h"
#include "ops/wide_output.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

bool writes_wide(const Node& node) {
  if (!node.domain().empty()) return false;
  if (node.op_type() == "FusedMatMul") return true;
  // Gemm adds beta * C in the inputs' dtype: only a Gemm without C widens.
  return node.op_type() == "Gemm" && (node.num_inputs() < 3 || node.input(2) == nullptr);
}

bool is_cast_to_f32(const Node& node) {
  return node.domain().empty() && node.op_type() == "Cast" && node.has_attr("to") &&
         node.attr("to").i() == static_cast<int64_t>(DType::kFloat32);
}

}  // namespace

int fold_widening_casts(Graph& graph, const OpRegistry& registry, const std::function<bool(const Node&)>& widens,
                        bool into_graph_outputs) {
  int folded = 0;
  std::vector<Node*> casts;
  for (Node* node : graph.nodes()) {
    if (is_cast_to_f32(*node)) casts.push_back(node);
  }
  for (Node* cast : casts) {
    if (cast->num_inputs() != 1 || cast->input(0) == nullptr) continue;
    Value* narrow = cast->input(0);
    Node* producer = narrow->producer();
    if (producer == nullptr || producer->num_outputs() != 1 || !widens(*producer)) continue;
    if (narrow->dtype() != DType::kBFloat16 && narrow->dtype() != DType::kFloat16) continue;
    if (narrow->uses().size() != 1 || is_graph_output(graph, narrow)) continue;
    if (producer->has_attr(kOutputDtypeAttr) && producer->attr(kOutputDtypeAttr).i() != 0) continue;
    if (!cast->control_inputs().empty() || !cast->control_outputs().empty()) continue;
    if (producer->device() != cast->device()) continue;
    Value* wide = cast->output(0);
    const bool graph_output = is_graph_output(graph, wide);
    if (graph_output && !into_graph_outputs) continue;
    producer->set_attr(kOutputDtypeAttr, Attribute(static_cast<int64_t>(DType::kFloat32)));
    if (graph_output) {
      // The output keeps its name (and value): the producer writes it.
      cast->set_output(0, graph.add_value(graph.unique_name(wide->name() + "/cast"), wide->type()));
      producer->set_output(0, wide);
      graph.remove_node(cast);
      graph.remove_value(narrow);
    } else {
      graph.replace_all_uses(wide, narrow);
      graph.remove_node(cast);
    }
    infer_node_types(*producer, registry);
    ++folded;
  }
  return folded;
}

bool WideOutputFusion::run(Graph& graph, PassContext& context) {
  folded_ = fold_widening_casts(graph, context.registry(), writes_wide, /*into_graph_outputs=*/true);
  return folded_ > 0;
}

}  // namespace weir
