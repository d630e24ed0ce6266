// GeluFusion — the exact GELU written out with Erf, as exporters emit it,
//   0.5 * x * (1 + erf(x / sqrt(2)))      (any grouping of the products;
//                                           x * (1/sqrt(2)) for the division)
// becomes one Gelu node: one pass over the data instead of five.
//
//   weir::GeluFusion gelu;
//   gelu.run(graph, ctx);
#pragma once

#include "passes/pass.h"

namespace weir {

class GeluFusion final : public Pass {
 public:
  std::string name() const override { return "gelu_fusion"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
