// QuantizeLinear, DequantizeLinear (ONNX opset 13) and DynamicQuantizeLinear
// (opset 11): schemas and CPU kernels.
//
// QuantizeLinear(x, y_scale, y_zero_point?) = saturate(round(x / y_scale) +
// y_zero_point), halves rounding to even, saturating to the range of
// y_zero_point's type (u8 when it is absent). DequantizeLinear(x, x_scale,
// x_zero_point?) = (x - x_zero_point) * x_scale in f32. Scale and zero point
// are one value (per tensor) or a 1-D tensor along `axis` (per axis).
// DynamicQuantizeLinear(x) quantizes f32 x to u8 with y_scale = (max - min) /
// 255 and y_zero_point = saturate(round(-min / y_scale)) over x's range
// widened to include 0. No gradients: the outputs are integers, or (Dequantize)
// computed from integers.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_quantize_linear_schemas(OpRegistry& registry);
void register_quantize_linear_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
