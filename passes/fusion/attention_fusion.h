// AttentionFusion — scaled dot-product attention as a transformer writes it,
//
//   q, k, v [B, S, H*D] -> Reshape [B, S, H, D] -> Transpose to heads first
//   (K to [B, H, D, S], by one Transpose or two)
//   P = Softmax(MatMul(Q, K^T) * scale (or / c) [+ mask], axis -1)
//   Y = Reshape(Transpose(MatMul(P, V), [0, 2, 1, 3]), [B, S, H*D])
//
// becomes one Attention(q, k, v, mask) node, which reads and writes the
// packed [B, S, H*D] layout directly: the four Transposes, the scale and
// the mask add disappear into two strided matmuls and a softmax.
//
//   weir::AttentionFusion fuse;
//   fuse.run(graph, ctx);   // after freezing and folding: the reshape targets must be constants
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class AttentionFusion final : public RewriteDriver {
 public:
  AttentionFusion();
};

}  // namespace weir
