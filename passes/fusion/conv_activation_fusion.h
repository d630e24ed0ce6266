// ConvActivationFusion — a Conv whose only reader is a Relu becomes one
// FusedConv (activation Relu): oneDNN applies the activation as a post-op
// while the output is still in registers, saving a pass over it.
//
//   weir::ConvActivationFusion fuse;
//   fuse.run(graph, ctx);   // after ConvBatchNormFolding: Conv-BN-Relu becomes one node
#pragma once

#include "passes/pass.h"

namespace weir {

class ConvActivationFusion final : public Pass {
 public:
  std::string name() const override { return "conv_activation_fusion"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
