// CPU kernels of SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and
// MeanSquaredError and of their backward ops. Sums accumulate in f64. A
// label outside [0, C) that is not ignore_index is an error naming the
// node and the position.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_loss_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
