// NoOpElimination — ops that return their input unchanged, and pairs that
// undo each other, are bypassed:
//   - Transpose with the identity permutation, Cast to the input's own
//     dtype, Reshape/Expand/Squeeze/Unsqueeze/Flatten whose static output
//     shape equals the input's;
//   - Transpose(Transpose(x)) whose permutations compose to the identity;
//   - Cast(Cast(x)) that widens and narrows back to x's dtype without loss
//     (f16/bf16 -> f32 -> same, f32 -> f64 -> f32).
// Readers then read the input directly; DCE removes what nothing reads.
//
//   weir::NoOpElimination no_ops;
//   no_ops.run(graph, ctx);
#pragma once

#include "passes/pass.h"

namespace weir {

class NoOpElimination final : public Pass {
 public:
  std::string name() const override { return "no_op_elimination"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
