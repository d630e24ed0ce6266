// CPU kernels of SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and
// MeanSquaredError and of their backward ops. Sums accumulate in f64. A
// label outside [0, C) that is not ignore_index is an error naming the
// node and the position.
//
// The attribute reading and input checks below are shared with the CUDA
// kernels of the same ops (ops/cuda/loss_kernels.cc): one message each.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "ops/kernel.h"
#include "ops/loss/loss_reduction.h"

namespace weir {

void register_loss_cpu_kernels(KernelRegistry& registry);

// The node's reduction attribute (mean without one).
LossReduction loss_reduction(const Node& node);

// A class loss's scores (or, for the backward ops, the reference)
// [n, c, inner...] with labels [n, inner...].
struct ClassLossShape {
  int64_t n = 0, c = 0, inner = 1;
};
// Checks scores [N, C, ...] and labels (i32/i64, scores' sizes without the
// class axis) and returns their shape.
ClassLossShape class_loss_shape(const KernelContext& ctx, const Tensor& scores, const Tensor& labels);
// Checks class weights: [C] of the scores' dtype.
void check_class_weights(const KernelContext& ctx, const Tensor& weights, const Tensor& scores, int64_t classes);
// Checks a backward op's dY: one element per position for reduction none, else one.
void check_loss_dy(const KernelContext& ctx, const Tensor& dy, LossReduction reduction, int64_t positions);
// MeanSquaredError: checks that target broadcasts to prediction, of its dtype.
void check_squared_error_target(const KernelContext& ctx, const Tensor& prediction, const Tensor& target);

}  // namespace weir
