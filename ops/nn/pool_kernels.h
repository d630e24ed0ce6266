// CPU kernels of MaxPool, AveragePool, their backward ops, GlobalAveragePool
// and GlobalMaxPool: plain loops over (N, C) planes, run in parallel;
// f16/bf16 compute in f32.
#pragma once

#include "core/tensor.h"
#include "ops/kernel.h"
#include "ops/nn/conv_problem.h"

namespace weir {

void register_pool_cpu_kernels(KernelRegistry& registry);

// Shared with the CUDA kernels of the same ops (ops/cuda/pool_kernels.cc).

// AveragePool's count_include_pad attribute (and its gradient's).
bool pool_count_include_pad(const Node& node);
// MaxPool's storage_order attribute: whether Indices count column-major.
bool max_pool_column_major(const Node& node);
// MaxPoolGrad / AveragePoolGrad: checks dY against the pooled output of `p`.
void check_pool_grad(const KernelContext& ctx, const Tensor& dy, const ConvProblem& p);
// GlobalMaxPool / GlobalAveragePool(X [N, C, spatial...]): Y's sizes
// [N, C, 1...] and X as `planes` = N C planes of `plane` elements; a max
// over empty planes fails.
struct GlobalPoolShape {
  std::vector<int64_t> sizes;
  int64_t planes = 0, plane = 0;
};
GlobalPoolShape global_pool_shape(const KernelContext& ctx, const Tensor& x, bool max);

}  // namespace weir
