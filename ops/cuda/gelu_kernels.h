// CUDA kernels of Gelu (approximate "none": x * Phi(x) through erf;
// "tanh": the tanh approximation) and of its backward op GeluGrad(dY, X) =
// dY * Gelu'(X); f32, f16 and bf16, computing in f32. Attributes, checks
// and error messages are the CPU kernels' (ops/elementwise/activation_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_gelu_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
