// PRelu (ONNX opset 16): schema, gradient rule and CPU kernels.
//
// PRelu(X, slope) = X where X >= 0, else slope * X, with slope broadcast
// unidirectionally to X (its shape broadcasts to X's; X's never grows).
// The gradient rule emits PReluGrad(dY, X, slope) -> (dX, dSlope), dSlope
// of X's shape, then sums dSlope back to slope's shape (SumToShape) when
// slope was broadcast.
//
//   register_prelu_schema(op_registry);
//   register_prelu_cpu_kernel(kernel_registry);
//
// Opset 6's per-channel slope ([C] against [N, C, ...]) is not this
// broadcast; the ONNX importer's adapters translate it.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_prelu_schema(OpRegistry& registry);
// Fails naming the node unless slope has X's dtype and its shape broadcasts
// to X's: every device's PRelu kernels check their inputs with it.
void check_prelu_slope(const KernelContext& ctx, const Tensor& x, const Tensor& slope);
// PReluGrad(dY, X, slope): check_prelu_slope, and dY of X's shape and dtype.
void check_prelu_grad(const KernelContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& slope);
void register_prelu_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
