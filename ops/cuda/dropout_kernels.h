// CUDA kernels of Dropout and DropoutGrad, f32, f16 and bf16, with the CPU
// kernels' semantics and random stream (ops/nn/dropout.h): for the same
// seed and run counter (a Session's ctx.rng_counter()) the mask and output
// equal the CPU's bit for bit. ratio and training_mode are scalars read on
// the host (a copy when they live on the GPU).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_dropout_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
