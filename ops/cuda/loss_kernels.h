// CUDA kernels of SoftmaxCrossEntropyLoss (with its optional log_prob
// output), NegativeLogLikelihoodLoss, MeanSquaredError and their backward
// ops, for f32, f16 and bf16 (the CPU kernels also take f64) with i32 or
// i64 labels: the semantics of ops/loss/loss_kernels.h, sums in f64.
//
// Labels are checked on the device: a label outside [0, C) that is not
// ignore_index is never used as an index (its position weighs 0), and the
// first such position and its label are read back once the step's work is
// done (cuda::check_device_values: the launch does not wait for it),
// failing the node with the CPU kernel's message: an error instead of a
// silently wrong loss.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_loss_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
