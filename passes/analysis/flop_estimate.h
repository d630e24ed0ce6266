// The floating-point operations a node does, estimated from its shapes:
// what inspect reports for a model and what explain's step-time model
// spreads a step's compute time by.
//
//   int64_t flops = weir::estimated_flops(*node);
//   int64_t total = weir::estimated_flops(graph);
//
// Multiply-adds count 2 (MatMul, Gemm, Attention, Conv and its two backward
// ops); other ops one per output element. Symbolic dims count as 1. An
// estimate for comparing models and placing work in time, not a roofline.
#pragma once

#include <cstdint>

#include "core/graph.h"

namespace weir {

// Elements of a shape with symbolic dims counted as 1 (per example); 0
// without a rank.
int64_t per_example_elements(const Shape& shape);

int64_t estimated_flops(const Node& node);
int64_t estimated_flops(const Graph& graph);

}  // namespace weir
