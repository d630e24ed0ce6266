// OptimizerUpdates — the update half of a training step: one update node
// per trained parameter (SGD, Momentum, Adam, AdamW or LAMB: ops/optimizer,
// writing the parameter and its state in place), the inputs every run feeds
// ("lr"; "step" for the Adam family), the optimizer state as persistent
// values "<parameter>/velocity", "/m", "/v", and, with loss scaling, the
// scale's own update. Every other reader of a parameter runs before its
// update (control edges), so the forward and backward passes see this
// step's weights. The loss becomes the graph's first output.
//
//   weir::OptimizerUpdates({.kind = weir::OptimizerKind::kAdam}).run(graph, ctx);  // after differentiate
#pragma once

#include "passes/pass.h"
#include "passes/training/optimizer_config.h"
#include "passes/training/training_strategy.h"

namespace weir {

class OptimizerUpdates final : public Pass {
 public:
  // `amp` supplies the loss scale's growth and backoff when the step scales its loss.
  explicit OptimizerUpdates(OptimizerConfig config, AmpStrategy amp = {}) : config_(config), amp_(std::move(amp)) {}
  std::string name() const override { return "optimizer_updates"; }
  bool run(Graph& graph, PassContext& context) override;

 private:
  OptimizerConfig config_;
  AmpStrategy amp_;
};

}  // namespace weir
