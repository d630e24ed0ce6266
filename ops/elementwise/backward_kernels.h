// CPU kernels of the backward ops that elementwise gradient rules emit:
// ReluGrad(dY, X), SigmoidGrad(dY, Y), TanhGrad(dY, Y) and SumToShape(X, Ref),
// which sums X over the axes along which Ref was broadcast.
#pragma once

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir {

void register_elementwise_backward_cpu_kernels(KernelRegistry& registry);

// SumToShape(X, Ref): checks that Ref's shape broadcasts to X's (shared
// with the CUDA kernel, ops/cuda/reduce_kernels.cc).
void check_sum_to_shape(const KernelContext& ctx, const Tensor& x, const Tensor& ref);

}  // namespace weir
