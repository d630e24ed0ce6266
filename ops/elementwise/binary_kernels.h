// CPU kernels of the broadcasting binary arithmetic ops: Add, Sub, Mul, Div
// for f32, f64, f16, bf16 and the integer types. f16/bf16 compute in f32.
// Integer Add/Sub/Mul wrap around (two's complement) instead of overflowing;
// integer Div truncates toward zero and reports division by zero as an error.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/kernel.h"

namespace weir {

void register_binary_cpu_kernels(KernelRegistry& registry);

// The output sizes of a broadcasting binary op on `a` and `b` for a kernel
// built for `dtype`; fails naming the node when an input has another dtype
// or the sizes do not broadcast. Every device's binary kernels check their
// inputs with it.
std::vector<int64_t> binary_output_sizes(KernelContext& ctx, const Tensor& a, const Tensor& b, DType dtype);

// Sum, Mean, Max, Min over any number of inputs (shared with the CUDA
// kernel, ops/cuda/elementwise_kernels.cc): the inputs' sizes broadcast
// together, checking that they have one dtype.
std::vector<int64_t> variadic_output_sizes(const KernelContext& ctx);
// Whether `out` overlaps an input other than as exactly input 0 (which the
// fold reads only at the element it writes): such an output must be
// computed into a fresh tensor.
bool variadic_output_overlaps_an_input(const KernelContext& ctx, const Tensor& out);

}  // namespace weir
