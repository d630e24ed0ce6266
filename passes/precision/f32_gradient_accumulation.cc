#include "passes/precision/f32_gradient_accumulation.h"

#include <set>
#include <string>

#include "core/type_inference.h"
#include "ops/wide_output.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

// Weir's ops that sum over the batch and can write f32 from bf16/f16.
bool accumulates(const Node& node) {
  static const std::set<std::string> kOps = {"Gemm", "ConvGradWeight", "ConvGradBias", "SumToShape"};
  return node.domain().empty() && kOps.count(node.op_type()) != 0;
}

bool is_cast_to_f32(const Node& node) {
  return node.domain().empty() && node.op_type() == "Cast" && node.has_attr("to") &&
         node.attr("to").i() == static_cast<int64_t>(DType::kFloat32);
}

}  // namespace

bool F32GradientAccumulation::run(Graph& graph, PassContext& context) {
  folded_ = 0;
  for (Node* cast : graph.nodes()) {
    if (!is_cast_to_f32(*cast) || cast->num_inputs() != 1 || cast->input(0) == nullptr) continue;
    Value* narrow = cast->input(0);
    Node* producer = narrow->producer();
    if (producer == nullptr || !accumulates(*producer) || producer->num_outputs() != 1) continue;
    if (narrow->dtype() != DType::kBFloat16 && narrow->dtype() != DType::kFloat16) continue;
    if (narrow->uses().size() != 1 || is_graph_output(graph, narrow)) continue;
    if (producer->has_attr(kOutputDtypeAttr) && producer->attr(kOutputDtypeAttr).i() != 0) continue;
    // Gemm adds beta * C in the inputs' dtype: a C keeps it narrow.
    if (producer->op_type() == "Gemm" && producer->num_inputs() > 2 && producer->input(2) != nullptr) continue;
    if (!cast->control_inputs().empty() || !cast->control_outputs().empty()) continue;
    Value* wide = cast->output(0);
    if (is_graph_output(graph, wide)) continue;  // the output keeps its name
    producer->set_attr(kOutputDtypeAttr, Attribute(static_cast<int64_t>(DType::kFloat32)));
    infer_node_types(*producer, context.registry());
    graph.replace_all_uses(wide, producer->output(0));
    graph.remove_node(cast);
    ++folded_;
  }
  return folded_ > 0;
}

}  // namespace weir
