// ElementwiseFusion — chains and small trees of elementwise ops (Add, Mul,
// Sub, Div, Max, Min, Neg, Abs, Exp, Log, Sqrt, Reciprocal, Relu, Sigmoid,
// Tanh, Erf, Floor, Ceil) whose intermediate results nothing else reads
// become one FusedElementwise: one pass over memory instead of one per op.
// Inside a group every value has the output's shape; other operands are one
// element (no broadcasting across the group).
//
//   weir::ElementwiseFusion fuse;
//   fuse.run(graph, ctx);   // last of the fusions: activations fuse into convs and matmuls first
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class ElementwiseFusion final : public RewriteDriver {
 public:
  ElementwiseFusion();
};

}  // namespace weir
