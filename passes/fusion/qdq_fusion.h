// QdqFusion — the QuantizeLinear/DequantizeLinear pairs of a QDQ model
// around a Conv, MatMul or Gemm become one integer node, which runs as an
// int8 oneDNN primitive (ops/quantization/dnnl_int8_conv.h):
//
//   DequantizeLinear(x_q) ─┐
//   DequantizeLinear(w_q) ─┼─ Conv [─ Relu] ─ QuantizeLinear   →  QLinearConv (FusedQLinearConv with the Relu)
//   bias (f32, or DequantizeLinear of i32) ┘
//   DequantizeLinear(a_q), DequantizeLinear(b_q) ─ MatMul | Gemm ─ QuantizeLinear  →  QLinearMatMul
//   DequantizeLinear(x_q) ─ MaxPool ─ QuantizeLinear (the same scale and zero point)  →  MaxPool(x_q), exactly
//
// Matched only when w_q / b_q and every scale and zero point are constants,
// the activation scales and zero points one value each, weight scales per
// tensor or per output channel (axis 0 of a conv weight, the N axis of a
// matmul weight), and the f32 intermediates have no other readers. The bias
// becomes i32 at scale x_scale * w_scale[m] (halves to even); a Relu becomes
// a floor at y_zero_point (Relu then QuantizeLinear is exactly that); a Gemm
// with transB has its constant weight transposed. Not matched (left to the
// reference kernels and f32 ops): Gemm with C, alpha or beta != 1 or transA,
// MatMul or Gemm followed by a Relu, weights without a DequantizeLinear.
// The fused graph differs from the f32 one by rounding only: f32 sums
// against exact integer sums, and the bias rounded to its i32 grid (at most
// one output step on a few elements).
//
//   weir::QdqFusion qdq;
//   qdq.run(graph, ctx);   // before constant folding, which would fold DequantizeLinear(w_q) into f32 weights
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class QdqFusion final : public RewriteDriver {
 public:
  QdqFusion();
};

}  // namespace weir
