// DeadCodeElimination — removes nodes whose outputs nothing reads (not a
// node, not a graph output), unless the op has side effects (optimizer
// updates, collectives, Assign) or a control edge leads from it; then
// constants nothing reads.
//
//   weir::DeadCodeElimination dce;
//   bool changed = dce.run(graph, ctx);
#pragma once

#include "passes/pass.h"

namespace weir {

class DeadCodeElimination final : public Pass {
 public:
  std::string name() const override { return "dead_code_elimination"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
