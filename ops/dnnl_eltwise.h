// A fused activation as oneDNN's eltwise post-op, for the primitives that
// apply one (convolutions, matmuls).
//
//   auto [algorithm, alpha, beta] = dnnl_eltwise(activation);
//   post_ops.append_eltwise(1.0f, algorithm, alpha, beta);
#pragma once

#include <dnnl.hpp>

#include <tuple>

#include "ops/elementwise/fused_activation.h"

namespace weir {

// Throws weir::Error(kInternal) for activation None, which has no post-op.
std::tuple<dnnl::algorithm, float, float> dnnl_eltwise(const FusedActivation& activation);

}  // namespace weir
