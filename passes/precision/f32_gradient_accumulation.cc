#include "passes/precision/f32_gradient_accumulation.h"

#include <set>
#include <string>

#include "passes/precision/wide_output_fusion.h"

namespace weir {

namespace {

// Weir's ops that sum over the batch and can write f32 from bf16/f16. Gemm
// adds beta * C in the inputs' dtype: a C keeps it narrow.
bool accumulates(const Node& node) {
  static const std::set<std::string> kOps = {"Gemm", "ConvGradWeight", "ConvGradBias", "SumToShape"};
  if (!node.domain().empty() || kOps.count(node.op_type()) == 0) return false;
  return node.op_type() != "Gemm" || node.num_inputs() < 3 || node.input(2) == nullptr;
}

}  // namespace

bool F32GradientAccumulation::run(Graph& graph, PassContext& context) {
  // A gradient that is a graph output keeps its Cast (and its name).
  folded_ = fold_widening_casts(graph, context.registry(), accumulates, /*into_graph_outputs=*/false);
  return folded_ > 0;
}

}  // namespace weir
