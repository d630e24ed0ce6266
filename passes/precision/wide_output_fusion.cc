#include "passes/precision/wide_output_fusion.h"

#include "core/type_inference.h"
#include "ops/wide_output.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

bool writes_wide(const Node& node) {
  if (!node.domain().empty() || node.num_outputs() != 1) return false;
  if (node.op_type() == "FusedMatMul") return true;
  // Gemm adds beta * C in the inputs' dtype: only a Gemm without C widens.
  return node.op_type() == "Gemm" && (node.num_inputs() < 3 || node.input(2) == nullptr);
}

bool is_cast_to_f32(const Node& node) {
  return node.domain().empty() && node.op_type() == "Cast" && node.has_attr("to") &&
         node.attr("to").i() == static_cast<int64_t>(DType::kFloat32);
}

}  // namespace

bool WideOutputFusion::run(Graph& graph, PassContext& context) {
  folded_ = 0;
  std::vector<Node*> casts;
  for (Node* node : graph.nodes()) {
    if (is_cast_to_f32(*node)) casts.push_back(node);
  }
  for (Node* cast : casts) {
    if (cast->num_inputs() != 1 || cast->input(0) == nullptr) continue;
    Value* narrow = cast->input(0);
    Node* producer = narrow->producer();
    if (producer == nullptr || !writes_wide(*producer)) continue;
    if (narrow->dtype() != DType::kBFloat16 && narrow->dtype() != DType::kFloat16) continue;
    if (narrow->uses().size() != 1 || is_graph_output(graph, narrow)) continue;
    if (producer->has_attr(kOutputDtypeAttr) && producer->attr(kOutputDtypeAttr).i() != 0) continue;
    if (!cast->control_inputs().empty() || !cast->control_outputs().empty()) continue;
    if (producer->device() != cast->device()) continue;
    Value* wide = cast->output(0);
    producer->set_attr(kOutputDtypeAttr, Attribute(static_cast<int64_t>(DType::kFloat32)));
    if (is_graph_output(graph, wide)) {
      // The output keeps its name (and value): the producer writes it.
      cast->set_output(0, graph.add_value(graph.unique_name(wide->name() + "/cast"), wide->type()));
      producer->set_output(0, wide);
      graph.remove_node(cast);
      graph.remove_value(narrow);
    } else {
      graph.replace_all_uses(wide, narrow);
      graph.remove_node(cast);
    }
    infer_node_types(*producer, context.registry());
    ++folded_;
  }
  return folded_ > 0;
}

}  // namespace weir
