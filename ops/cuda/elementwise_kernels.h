// CUDA kernels of the elementwise ops, f32, f16 and bf16 (the 16-bit types
// compute in f32, as on the CPU): Add, Sub, Mul, Div, Pow, Mod (fmod=1)
// and PRelu with NumPy broadcasting; the variadic Sum, Mean, Max, Min; the
// unary ops and activations (Neg ... Sign, Floor, Ceil, Round, LeakyRelu,
// Elu, Selu, Erf, Softplus, ..., Celu, Reciprocal; Gelu has its own,
// gelu_kernels.h); Clip; IsNaN and IsInf. Semantics, attributes and error
// messages are the CPU kernels' (ops/elementwise/binary_kernels.h,
// unary_kernels.h, activation_kernels.h, prelu.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_elementwise_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
