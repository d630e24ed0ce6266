// CPU kernels of Conv, ConvTranspose, ConvGradData, ConvGradWeight and
// ConvGradBias. f32 and bf16 run through oneDNN (DnnlConv); f16 is widened
// to f32 around it; f64 runs the direct loops of conv_problem.h.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/kernel.h"
#include "ops/nn/conv_problem.h"

namespace weir {

void register_conv_cpu_kernels(KernelRegistry& registry);

// Shape checks shared with the CUDA kernels of the same ops
// (ops/cuda/conv_kernels.cc): one message each.

// Fails unless every present input has `dtype`.
void check_conv_inputs_dtype(const KernelContext& ctx, DType dtype);
// Whether any size is 0.
bool has_zero_size(const std::vector<int64_t>& sizes);
// The ConvGradData/ConvGradWeight node's "transposed" attribute (ConvTranspose's gradient).
bool conv_grad_transposed(const Node& node);

// Conv, ConvTranspose and FusedConv(X, W, B?, Z?): the output Y of problem
// `p` (forward: its output side; else its input side).
struct ConvOutput {
  std::vector<int64_t> sizes;  // Y's sizes, channels-last when the data is
  int64_t channels = 0;        // Y's channels
  bool empty = false;          // X, W or Y has a size 0: no products
};
// Checks the bias (inputs 2: one value per output channel) and the addend
// (input 3: Y's shape).
ConvOutput conv_output(const KernelContext& ctx, const ConvProblem& p, bool forward, bool channels_last);
// ConvGradData/ConvGradWeight(dY, ...): checks dY against the forward
// output of `p`; returns whether dY, W or X has a size 0.
bool check_conv_grad(const KernelContext& ctx, const ConvProblem& p, bool transposed, const Tensor& dy, const Tensor& x,
                     const Tensor& w);
// ConvGradBias(dY): dY as [batch, channels, plane], checked to be [N, C, ...].
struct ConvBiasGradShape {
  int64_t batch = 0, channels = 0, plane = 0;
};
ConvBiasGradShape conv_bias_grad_shape(const KernelContext& ctx, const Tensor& dy);

}  // namespace weir
