// WideOutputFusion — in an inference graph under mixed precision, a
// product that is cast up to f32 right away writes f32 itself.
//
//   weir::WideOutputFusion widen;
//   widen.run(graph, ctx);      // after auto_mixed_precision (inference_pipeline does, under --amp)
//   widen.folded_casts();
//
// It rewrites Cast(to=f32)(Y) where Y, bf16 or f16, is read by that Cast
// alone and comes from FusedMatMul or Gemm (without C): the producer gets
// output_dtype f32 (ops/wide_output.h). oneDNN accumulates in f32 either
// way, so the result is the f32 value the bf16 one was rounded from: the
// classifier's logits keep f32's resolution (a bf16 logit of about 1 moves
// in steps of 2^-7, which is more than the gap between the top two classes
// of many inputs), and the Cast's pass over memory goes. When the Cast's
// result is a graph output, the producer writes that output under its name.
// The training-side counterpart for gradients is f32_gradient_accumulation.
#pragma once

#include <functional>

#include "passes/pass.h"

namespace weir {

// The mechanism this pass and f32_gradient_accumulation share: folds each
// Cast(to=f32)(Y) into Y's producer (output_dtype f32, ops/wide_output.h)
// where Y, bf16 or f16, is read by that Cast alone, the producer has one
// output, no output_dtype yet and `widens(producer)`, and both sit on one
// device with no control edges on the Cast. A Cast whose result is a graph
// output is folded only with `into_graph_outputs` (the producer then writes
// that output under its name). Returns the number folded.
int fold_widening_casts(Graph& graph, const OpRegistry& registry, const std::function<bool(const Node&)>& widens,
                        bool into_graph_outputs);

class WideOutputFusion final : public Pass {
 public:
  std::string name() const override { return "wide_output_fusion"; }
  bool run(Graph& graph, PassContext& context) override;

  int folded_casts() const { return folded_; }

 private:
  int folded_ = 0;
};

}  // namespace weir
