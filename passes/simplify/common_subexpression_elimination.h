// CommonSubexpressionElimination — two nodes of the same op, reading the
// same values with equal attributes, compute the same thing: readers of the
// second read the first's outputs instead, and the second goes. Stateful,
// side-effecting and collective ops are never merged (two Dropouts draw
// different masks; two updates both apply).
//
//   weir::CommonSubexpressionElimination cse;
//   cse.run(graph, ctx);
#pragma once

#include "passes/pass.h"

namespace weir {

class CommonSubexpressionElimination final : public Pass {
 public:
  std::string name() const override { return "common_subexpression_elimination"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
