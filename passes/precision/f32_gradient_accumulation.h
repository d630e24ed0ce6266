// F32GradientAccumulation — under mixed precision, the ops that sum a
// gradient over the batch write f32 instead of rounding the sum to bf16/f16
// and casting it back.
//
//   weir::F32GradientAccumulation accumulate;
//   accumulate.run(training_graph, ctx);    // after autodiff (minimize() does, with AMP)
//   accumulate.folded_casts();              // Casts it removed
//
// It rewrites (fold_widening_casts, passes/precision/wide_output_fusion.h)
// Cast(to=f32)(Y) where Y, bf16 or f16, is read by that Cast
// alone and comes from Gemm, ConvGradWeight, ConvGradBias or SumToShape
// (the weight and bias gradients of MatMul, Gemm, Conv and broadcasting
// adds): the producer gets output_dtype f32 (ops/wide_output.h) and the
// Cast's readers read it. The sum itself was already accumulated in f32 (or
// wider) inside those kernels, so the result is the f32 value the bf16 one
// was rounded from. Why it matters: a weight gradient rounded to bf16 keeps
// 8 bits, so data-parallel ranks' rounded half-batch sums, averaged, differ
// from the rounded whole-batch sum by up to an ulp, and Adam amplifies that;
// in f32 they agree to f32 rounding.
#pragma once

#include "passes/pass.h"

namespace weir {

class F32GradientAccumulation final : public Pass {
 public:
  std::string name() const override { return "f32_gradient_accumulation"; }
  bool run(Graph& graph, PassContext& context) override;

  int folded_casts() const { return folded_; }

 private:
  int folded_ = 0;
};

}  // namespace weir
