// LayerNormFusion — layer normalization over the last axis written out in
// elementwise ops, as exporters before ONNX opset 17 emit it:
//   mean = ReduceMean(x, [-1]);  d = x - mean;  var = ReduceMean(d^2, [-1])
//   y = d / Sqrt(var + epsilon)  [* gamma]  [+ beta]
// (d^2 as Pow(d, 2) or Mul(d, d)) becomes one LayerNormalization node.
//
//   weir::LayerNormFusion layer_norm;
//   layer_norm.run(graph, ctx);
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class LayerNormFusion final : public RewriteDriver {
 public:
  LayerNormFusion();
};

}  // namespace weir
