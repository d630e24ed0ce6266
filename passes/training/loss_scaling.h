// Dynamic loss scaling, the two halves around autodiff: ScaleLoss makes the
// step differentiate loss * loss_scale (a persistent f32 scalar), so
// gradients too small for f16 are lifted into its range; UnscaleGradients
// divides them back and yields the overflow flag every update skips on.
// The scale's own update (halve on overflow, grow after clean steps) is the
// optimizer updates' (optimizer_updates.h), since it runs with them.
//
//   ctx.options<weir::TrainingStepState>().graph.loss = "loss";
//   weir::ScaleLoss({.initial_scale = 65536}).run(graph, ctx);        // before Differentiate
//   weir::UnscaleGradients().run(graph, ctx);                          // after it
#pragma once

#include "passes/pass.h"

namespace weir {

struct LossScaleOptions {
  double initial_scale = 65536.0;
};

class ScaleLoss final : public Pass {
 public:
  explicit ScaleLoss(LossScaleOptions options) : options_(options) {}
  std::string name() const override { return "scale_loss"; }
  bool run(Graph& graph, PassContext& context) override;

 private:
  LossScaleOptions options_;
};

class UnscaleGradients final : public Pass {
 public:
  std::string name() const override { return "unscale_gradients"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
