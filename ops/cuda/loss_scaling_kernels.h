// CUDA kernels of UnscaleGradients (f32, f16 and bf16 gradients, all of one
// type; the CPU kernel also takes f64) and UpdateLossScale: the semantics
// of ops/optimizer/loss_scaling.h, every scalar read on the device.
//
// Where the CPU kernel fails on a loss scale that is not positive and
// finite, this one sets found_inf instead (the update that reads it is
// then skipped and the scale backed off): the device cannot fail the node
// without a host round trip per step.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_loss_scaling_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
