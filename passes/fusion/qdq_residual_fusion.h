// QdqResidualFusion — a quantized residual Add whose one operand comes
// straight from an int8 conv (what qdq_fusion leaves of a ResNet block's
// last conv) becomes that conv's addend, so the block's output never leaves
// int8:
//
//   QLinearConv(x, ...) ─ DequantizeLinear ─┐
//   DequantizeLinear(z_q) ─────────────────┴─ Add [─ Relu] ─ QuantizeLinear
//     →  FusedQLinearConv(x, ..., y_scale, y_zero, B, Z = z_q, z_scale, z_zero)  (activation Relu or None)
//
// FusedQLinearConv then computes saturate(round(activation((acc + B) * x_scale *
// w_scale[m] + (z_q - z_zero) * z_scale) / y_scale) + y_zero) (oneDNN: the
// sum post-op on the addend, which the output buffer holds on entry). It
// skips the conv output's own rounding to its u8 grid, so results move by at
// most about half that grid's step (in output steps) plus one rounding.
// It also skips that rounding's saturation: where the conv's values overflow
// its calibrated range, the fused result is the unclipped (f32-like) one.
// Matched only when the conv has no activation or addend yet and its output
// and the dequantized value are read by this Add alone, the Add does not
// broadcast, z_q has the output's type, and every scale and zero point is
// one constant value; the conv's output parameters must be those its
// DequantizeLinear reads.
//
//   weir::QdqResidualFusion residual;
//   residual.run(graph, ctx);   // after QdqFusion, before the layout pass
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class QdqResidualFusion final : public RewriteDriver {
 public:
  QdqResidualFusion();
};

}  // namespace weir
