// CPU kernels of the comparison ops, And/Or/Xor/Not and Where.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir {

void register_logic_cpu_kernels(KernelRegistry& registry);

// The output sizes of a comparison or And/Or/Xor of a and b: checks one
// dtype and that they broadcast. Shared with the CUDA kernels
// (ops/cuda/logic_kernels.cc), as is where_sizes.
std::vector<int64_t> comparison_sizes(const KernelContext& ctx, const Tensor& a, const Tensor& b);
// Where(condition, X, Y): checks a bool condition, X and Y of one dtype and
// that the three broadcast; returns the output sizes.
std::vector<int64_t> where_sizes(const KernelContext& ctx, const Tensor& condition, const Tensor& x, const Tensor& y);

}  // namespace weir
