// ConvInputAffineFolding — a per-channel affine map of a conv's input
// (input normalization: Sub the mean, Div by the std, or Add/Mul by
// constants, scalar or one value per channel) goes into the conv's weights
// and bias:
//
//   Conv(x * s + t, W, B)  ==  Conv(x, W * s[c], B + sum over c, window of W * t[c])
//
// which removes a pass over the conv's input (ImageNet-shaped models that
// normalize inside the graph: 0.1 ms per image on this CPU). The shift only
// folds when the conv pads nothing: padding adds zeros after the shift,
// where the folded conv would see -t/s. A pure scale folds at any padding.
//
//   weir::ConvInputAffineFolding fold;
//   fold.run(graph, ctx);   // on constant weights (after freeze_parameters), channels-first convs
#pragma once

#include "passes/rewrite_rule.h"

namespace weir {

class ConvInputAffineFolding final : public RewriteDriver {
 public:
  ConvInputAffineFolding();
};

}  // namespace weir
