// ConvActivationFusion — a Conv whose only reader is an activation becomes
// one FusedConv: oneDNN applies the activation as a post-op while the output
// is still in registers, saving a pass over it. Fused: Relu, LeakyRelu,
// Clip with constant bounds (Relu6), Sigmoid, Tanh, Gelu (erf or tanh form)
// and SiLU written as Mul(y, Sigmoid(y)). A FusedConv without an activation
// (from the layout pass) takes one too.
//
//   weir::ConvActivationFusion fuse;
//   fuse.run(graph, ctx);   // after ConvBatchNormFolding: Conv-BN-Relu becomes one node
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class ConvActivationFusion final : public RewriteDriver {
 public:
  ConvActivationFusion();
};

}  // namespace weir
