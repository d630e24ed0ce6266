// CUDA kernels of BatchNormalization (inference with the given mean and
// var, and training_mode with the batch's statistics, giving the running
// mean and var as the CPU kernel does: running * momentum + batch *
// (1 - momentum), the variance biased) and BatchNormGrad; f32, f16 and
// bf16. Own kernels (batch_norm_device.h says why not cuDNN's); semantics,
// checks and messages are the CPU kernels' (ops/nn/normalization_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_batch_norm_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
