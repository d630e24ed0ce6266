// Differentiate — the backward half of a training step: the gradient of the
// step's loss (or of the scaled loss) with respect to every parameter it
// depends on, appended by autodiff (passes/autodiff). Parameters the loss
// does not reach are recorded as frozen and get no update.
//
//   ctx.options<weir::TrainingStepState>().graph.loss = "loss";
//   weir::Differentiate().run(graph, ctx);
//   ctx.options<weir::TrainingStepState>().gradients;   // by trained parameter
#pragma once

#include "passes/pass.h"

namespace weir {

class Differentiate final : public Pass {
 public:
  std::string name() const override { return "differentiate"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
