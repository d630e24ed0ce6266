// MatMulInteger and QLinearMatMul (ONNX opset 10): schemas and CPU kernels.
//
// MatMulInteger(A, B, a_zero_point?, b_zero_point?) = (A - a_zero_point)
// (B - b_zero_point) in i32, with NumPy matmul's batching, broadcasting and
// 1-D promotion; A and B are i8 or u8 (each its own), the zero points one
// value, or per row of A ([M], or [..., M, 1] over A's batch) and per column
// of B ([N], or [..., 1, N]). QLinearMatMul(a, a_scale, a_zero_point, b,
// b_scale, b_zero_point, y_scale, y_zero_point) takes that i32 product and
// requantizes it: saturate(round(acc * (a_scale * b_scale / y_scale)) +
// y_zero_point) in f32, halves to even, in y_zero_point's type; a's and b's
// scales lie like their zero points. Sums wrap in 32 bits, as ONNX allows.
// Both run on oneDNN's int8 matmul where it applies (B s8 of rank <= 2 with
// zero points 0, A's parameters one value: dnnl_int8_matmul.h), else on the
// int32 loops here.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_integer_matmul_schemas(OpRegistry& registry);
void register_integer_matmul_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
