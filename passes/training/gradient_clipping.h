// ClipGradients — scales the step's gradients together so that their global
// L2 norm is at most `max_norm` (one ClipByGlobalNorm node), between the
// gradients and the updates.
//
//   weir::ClipGradients({.max_norm = 1.0}).run(graph, ctx);   // after differentiate (and unscale)
#pragma once

#include "passes/pass.h"

namespace weir {

struct ClipOptions {
  double max_norm = 1.0;
};

class ClipGradients final : public Pass {
 public:
  explicit ClipGradients(ClipOptions options) : options_(options) {}
  std::string name() const override { return "clip_gradients"; }
  bool run(Graph& graph, PassContext& context) override;

 private:
  ClipOptions options_;
};

}  // namespace weir
