// ConvInteger and QLinearConv (ONNX opset 10): schemas and CPU kernels.
//
// ConvInteger(x, w, x_zero_point?, w_zero_point?) is Conv of (x -
// x_zero_point) with (w - w_zero_point) in i32 (padding contributes 0, as
// if padded with the zero point), with Conv's attributes (auto_pad,
// dilations, group, kernel_shape, pads, strides) and 1 to 3 spatial axes;
// x and w are i8 or u8 (each its own), x's zero point one value, w's one
// value or one per output channel. QLinearConv(x, x_scale, x_zero_point, w,
// w_scale, w_zero_point, y_scale, y_zero_point, B?) adds the i32 bias B [M]
// to that sum and requantizes it per output channel m: saturate(round(acc *
// (x_scale * w_scale[m] / y_scale)) + y_zero_point) in f32, halves to even,
// in y_zero_point's type. Sums wrap in 32 bits, as ONNX allows.
// FusedQLinearConv (Weir's, made by qdq_fusion) adds a Relu (a floor at
// y_zero_point) and a channels-last layout. QLinearConv and FusedQLinearConv
// run on oneDNN's int8 convolution where it applies (s8 weights with zero
// points 0: dnnl_int8_conv.h), else on the int32 loops here.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_integer_conv_schemas(OpRegistry& registry);
void register_integer_conv_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
