// CUDA kernels of InstanceNormalization and InstanceNormGrad, f32, f16 and
// bf16 (computing in f32, statistics two-pass in f32). Semantics, input
// checks and error messages are the CPU kernels'
// (ops/nn/normalization_kernels.h): each (N, C) plane of X [N, C, spatial...]
// normalized over its spatial elements, then per-channel scale and B.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_instance_norm_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
