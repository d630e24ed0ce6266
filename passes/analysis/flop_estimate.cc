#include "passes/analysis/flop_estimate.h"

#include <string>

namespace weir {

int64_t per_example_elements(const Shape& shape) {
  if (!shape.has_rank()) return 0;
  int64_t n = 1;
  for (const Dim& d : shape.dims()) n *= d.is_static() ? d.size() : 1;
  return n;
}

namespace {

// A convolution weight's taps per output channel: in/group x kernel.
int64_t taps(const Shape& w) {
  int64_t n = 1;
  for (size_t i = 1; i < static_cast<size_t>(w.rank()); ++i) n *= w[i].is_static() ? w[i].size() : 1;
  return n;
}

}  // namespace

int64_t estimated_flops(const Node& node) {
  if (node.num_outputs() == 0 || node.output(0) == nullptr) return 0;
  const Shape& out = node.output(0)->shape();
  const std::string& op = node.op_type();
  if ((op == "MatMul" || op == "Gemm" || op == "FusedMatMul") && node.num_inputs() >= 2 && node.input(0)->shape().has_rank()) {
    const Shape& a = node.input(0)->shape();
    bool trans_a = op == "Gemm" && node.has_attr("transA") && node.attr("transA").i() != 0;
    const Dim& k = a.rank() == 1 ? a[0] : a[trans_a ? a.rank() - 2 : a.rank() - 1];
    return 2 * per_example_elements(out) * (k.is_static() ? k.size() : 1);
  }
  if (op == "Attention" && node.input(0)->shape().has_rank() && node.input(0)->shape().rank() == 3) {
    // Q K^T and P V: each 2 * B * S * S * (H * D).
    const Shape& q = node.input(0)->shape();
    int64_t seq = q[1].is_static() ? q[1].size() : 1;
    return 4 * per_example_elements(q) * seq;
  }
  if ((op == "Conv" || op == "ConvTranspose" || op == "FusedConv") && node.num_inputs() >= 2 && node.input(1)->shape().has_rank()) {
    // W is [out, in/group, k...] for Conv: each output element sums over
    // in/group x k taps. For ConvTranspose W is [in, out/group, k...]: each
    // input element scatters into out/group x k outputs.
    const Shape& spatial = op != "ConvTranspose" ? out : node.input(0)->shape();
    return 2 * per_example_elements(spatial) * taps(node.input(1)->shape());
  }
  if ((op == "ConvGradData" || op == "ConvGradWeight") && node.num_inputs() >= 3) {
    // (dY, W, X) and (dY, X, W): each the forward's multiply-adds, one per
    // element of dY and tap of W.
    const Shape& w = node.input(op == "ConvGradData" ? 1 : 2)->shape();
    if (w.has_rank()) return 2 * per_example_elements(node.input(0)->shape()) * taps(w);
  }
  return per_example_elements(out);
}

int64_t estimated_flops(const Graph& graph) {
  int64_t flops = 0;
  for (const Node* node : graph.nodes()) flops += estimated_flops(*node);
  return flops;
}

}  // namespace weir
