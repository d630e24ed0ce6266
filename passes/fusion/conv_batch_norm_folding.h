// ConvBatchNormFolding — an inference-mode BatchNormalization right after a
// Conv (the Conv's only reader), with constant weights and statistics, is
// folded into the Conv's weights and bias:
//   s = scale / sqrt(var + epsilon)   (per output channel)
//   W' = W * s,   b' = (b - mean) * s + bias
// so the normalization costs nothing at run time.
//
//   weir::ConvBatchNormFolding fold;
//   fold.run(graph, ctx);   // after FreezeParameters when weights are persistent
#pragma once

#include "passes/pass.h"

namespace weir {

class ConvBatchNormFolding final : public Pass {
 public:
  std::string name() const override { return "conv_batch_norm_folding"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
