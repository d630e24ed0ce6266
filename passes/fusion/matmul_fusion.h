// MatMulFusion — a MatMul with a 2-D right operand (a Linear layer, on
// inputs of any batch rank: [batch, seq, hidden] x [hidden, out]) absorbs the
// constant bias added to it and the activation after it into one
// FusedMatMul: oneDNN adds the bias and applies the activation while the
// product is in registers, and packs a constant B once into its preferred
// layout. A transformer's feed-forward MatMul+Add+Gelu becomes one node.
//
//   weir::MatMulFusion fuse;
//   fuse.run(graph, ctx);   // before MatMulAddToGemm, which takes what is left
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class MatMulFusion final : public RewriteDriver {
 public:
  MatMulFusion();
};

}  // namespace weir
