// CPU kernels of Shape, Reshape, Flatten, Identity, Squeeze, Unsqueeze
// (views: no copy) and Transpose (any rank, any dtype; copies by element
// size).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir {

void register_tensor_cpu_kernels(KernelRegistry& registry);

// Transpose of `x` by the perm attribute (`perm`; empty: reverse the axes),
// checked to be a permutation: the output's sizes and, for each output
// axis, its stride in the dense input. Shared with the CUDA kernel.
struct TransposeView {
  std::vector<int64_t> sizes, strides;
};
TransposeView transpose_view(const KernelContext& ctx, const std::vector<int64_t>& perm, const Tensor& x);

// The views whose outputs depend on attributes and the input's sizes alone
// (Flatten, Identity): the output shares the input's memory and no element
// is read, so the same kernel serves any device. Registered for the CPU by
// register_tensor_cpu_kernels, and for each accelerator by its backend's
// kernel registration. (Reshape, Squeeze and Unsqueeze may read a shape or
// axes tensor, which would live in device memory: not here.)
void register_view_kernels(KernelRegistry& registry, DeviceType device);

}  // namespace weir
