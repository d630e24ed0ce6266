// ONNX's training-preview optimizers (domain "ai.onnx.preview.training",
// opset 1): Adagrad, Adam and Momentum. Schemas and CPU kernels.
//
// Unlike Weir's own optimizer ops of the same names (optimizer_schemas.h:
// in place, one parameter, lr after the state) these are pure functions in
// ONNX's layout: inputs R (learning rate, a scalar), T (the update count, an
// i64 scalar), then n tensors X_1..X_n, their gradients G_1..G_n and each
// state in turn (Adagrad: H; Adam: V then H; Momentum: V), all of one type
// and each group's of X_i's shape. Outputs are the new X_1..X_n, then the new
// state tensors in the same order; trailing outputs may be left out.
//
//   Adagrad  r = R / (1 + T·decay_factor); g = norm_coefficient·X + G;
//            H' = H + g²; X' = X − r·g / (√H' + epsilon)
//   Adam     g = norm_coefficient·X + G; V' = alpha·V + (1 − alpha)·g;
//            H' = beta·H + (1 − beta)·g²; R' = T > 0 ? R·√(1 − beta^T) / (1 − alpha^T) : R;
//            X' = (1 − norm_coefficient_post)·(X − R'·V' / (√H' + epsilon))
//   Momentum g = norm_coefficient·X + G; b = T > 0 ? beta : 1; V' = alpha·V + b·g;
//            X' = X − R·V' (mode "standard") or X − R·(g + alpha·V') ("nesterov")
//
// Arithmetic is in f64 whatever the tensors' type (f32 or f64). No gradient
// rules: these are updates, not differentiable functions of the model.
#pragma once

#include <cstddef>
#include <vector>

#include "core/op_schema.h"
#include "ops/kernel.h"
#include "ops/optimizer/onnx_training_rule.h"

namespace weir {

inline constexpr const char* kOnnxTrainingDomain = "ai.onnx.preview.training";

void register_onnx_training_schemas(OpRegistry& registry);
void register_onnx_training_cpu_kernels(KernelRegistry& registry);

// Shared with the CUDA kernels (ops/cuda/onnx_training_kernels.cc): one
// check, one message.

// The roles of one optimized tensor's inputs after R and T, X and G first
// ("X", "G", "H" for Adagrad), as messages name them.
std::vector<const char*> onnx_training_roles(OnnxTrainingRule rule);
// A kernel's node: Momentum's required attributes and its mode; throws
// naming the node.
void check_onnx_training_node(const Node& node, OnnxTrainingRule rule);
// The number of optimized tensors n: checks that the inputs after R and T
// split into whole groups and that there are at most (k - 1) n outputs.
size_t onnx_training_tensor_count(const KernelContext& ctx, OnnxTrainingRule rule);
// Checks that X_1 is f32 or f64 and that every tensor of each group has its
// type and its X's shape; returns that type.
DType check_onnx_training_tensors(const KernelContext& ctx, OnnxTrainingRule rule, size_t n);

}  // namespace weir
