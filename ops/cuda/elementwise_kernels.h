// CUDA kernels of the elementwise ops: Add, Sub, Mul, Div with NumPy
// broadcasting, and Neg, Relu, Sigmoid, Tanh, Exp; f32, f16 and bf16
// (the 16-bit types compute in f32, as on the CPU). Semantics are the CPU
// kernels' (ops/elementwise/binary_kernels.h, unary_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_elementwise_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
