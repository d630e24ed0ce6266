// Dynamic loss scaling for fp16 training: the loss is multiplied by a scale
// before differentiation so small gradients survive in f16, and these two
// ops undo it and adapt the scale.
//
//   UnscaleGradients(scale, grads...) -> (found_inf, grads / scale...)
//     found_inf (bool scalar) is true when any gradient holds an Inf or NaN.
//   UpdateLossScale(scale, good_steps, found_inf) -> (scale, good_steps)   in place
//     on overflow: scale *= backoff_factor (not below min_scale), good_steps = 0;
//     otherwise good_steps += 1, and after growth_interval clean steps in a
//     row scale *= growth_factor and good_steps = 0.
//
// The optimizer updates take found_inf as their `skip` input, so an
// overflowed step leaves the parameters and optimizer state untouched.
// The pass side (where the scale is applied and these ops are inserted)
// is passes/training/loss_scaling.h, in the training pipeline with AMP in fp16.
#pragma once

#include <cstdint>

#include "core/op_schema.h"
#include "ops/kernel.h"
#include "ops/optimizer/loss_scale_schedule.h"

namespace weir {

void register_loss_scaling_schemas(OpRegistry& registry);
void register_loss_scaling_cpu_kernels(KernelRegistry& registry);

// UpdateLossScale's attributes, read and checked (growth_interval >= 1,
// else throws naming the node) the same way by the CPU and CUDA kernels.
LossScaleSchedule loss_scale_schedule(const Node& node);
// UpdateLossScale(scale, good_steps, found_inf): checks an f32, an i64 and
// a bool scalar.
void check_loss_scale_inputs(const KernelContext& ctx);

}  // namespace weir
