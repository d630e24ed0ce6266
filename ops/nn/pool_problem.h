// The geometry of a pooling node over an input [N, C, spatial...], as a
// depthwise ConvProblem (group = C, no weights): the windows are the same,
// and ceil_mode may add one window per axis.
#pragma once

#include <vector>

#include "core/graph.h"
#include "ops/nn/conv_problem.h"

namespace weir {

// Reads kernel_shape (required), strides, pads, auto_pad, dilations and
// ceil_mode. Throws weir::Error(kShape) naming the node on bad attributes or
// an input that is not [N, C, spatial...] with 1 to 3 spatial axes.
ConvProblem pool_problem(const Node& node, const std::vector<int64_t>& x_sizes);

}  // namespace weir
