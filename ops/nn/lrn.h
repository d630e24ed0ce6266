// LRN, local response normalization across channels (ONNX opset 13):
// schema, gradient rule and CPU kernels.
//
// For X [N, C, D1, ..., Dk], each element is divided by
// (bias + alpha / size * sum of squares over the channel window)^beta, the
// window of channel c being [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]
// clipped to [0, C). The gradient rule emits LRNGrad(dY, X) with the node's
// attributes. Plain loops with f64 window sums, for f32, f64, f16 and bf16.
//
//   register_lrn_schema(op_registry);
//   register_lrn_cpu_kernel(kernel_registry);
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_lrn_schema(OpRegistry& registry);
void register_lrn_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
