// GeluFusion — GELU written out, as exporters emit it, becomes one Gelu
// node: one pass over the data instead of five to nine. Both forms:
//   0.5 * x * (1 + erf(x / sqrt(2)))                       approximate none
//   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  approximate tanh
// (any grouping of the outer products; x * (1/sqrt(2)) for the division;
// x^3 as Pow or two Muls). The pattern's nodes are removed with it.
//
//   weir::GeluFusion gelu;
//   gelu.run(graph, ctx);
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class GeluFusion final : public RewriteDriver {
 public:
  GeluFusion();
};

}  // namespace weir
