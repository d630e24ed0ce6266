// ConvResidualFusion — Add(Conv(x), z) becomes FusedConv(x, ..., Z = z):
// oneDNN adds the residual z with a sum post-op while the conv output is in
// registers, and a following activation fuses onto the same node
// (conv_activation_fusion runs next), so ResNet's conv-add-relu is one pass
// over the output instead of three.
//
//   weir::ConvResidualFusion fuse;
//   fuse.run(graph, ctx);   // before ConvActivationFusion
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class ConvResidualFusion final : public RewriteDriver {
 public:
  ConvResidualFusion();
};

}  // namespace weir
