// The activation a node computes, as the fused ops (FusedConv,
// FusedMatMul) apply it: shared by the fusion rules that fold an activation
// into its producer.
//
//   Value* y = nullptr;
//   if (std::optional<FusedActivation> act = activation_of(node, rewriter, y)) { ... y's producer ... }
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ops/elementwise/fused_activation.h"
#include "passes/rewrite_rule.h"

namespace weir {

// The op types activation_of may recognise (the roots of the fusion rules).
std::vector<std::string> fusable_activation_ops();

// The activation `root` computes of a value `y`, which it sets, or nullopt
// when `root` is not one a fused op can apply: Relu, LeakyRelu, Clip with
// constant bounds, Sigmoid, Tanh, Gelu (erf or tanh form), or SiLU written as
// Mul(y, Sigmoid(y)). `y` must be read by the activation alone (by the
// Sigmoid and the Mul for SiLU), so fusing removes its only readers.
std::optional<FusedActivation> activation_of(const Node& root, Rewriter& rw, Value*& y);

}  // namespace weir
