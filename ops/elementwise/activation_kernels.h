// CPU kernels of the activations defined in activation_functions.h
// (LeakyRelu, Elu, Selu, Gelu, Erf, Softplus, Softsign, HardSigmoid,
// HardSwish, Sin, Cos, Reciprocal, Floor, Ceil, Round) and of their `<Op>Grad`
// backward ops; of Clip and ClipGrad; and of IsNaN and IsInf.
#pragma once

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir {

void register_activation_cpu_kernels(KernelRegistry& registry);

// Input checks shared with the CUDA kernels of the same ops
// (ops/cuda/gelu_kernels.cc, ops/cuda/elementwise_grad_kernels.cc).

// Fails unless `t` has the dtype the kernel was built for.
void check_activation_dtype(const KernelContext& ctx, const Tensor& t, DType dtype);
// <Op>Grad(dY, X): both of the kernel's dtype and of one shape.
void check_activation_grad(const KernelContext& ctx, const Tensor& dy, const Tensor& x, DType dtype);
// ClipGrad(dY, X): one shape and dtype.
void check_clip_grad(const KernelContext& ctx, const Tensor& dy, const Tensor& x);

}  // namespace weir
