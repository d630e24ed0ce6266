// CUDA kernels of the optimizer updates (SGD, Momentum, Adagrad, Adam,
// AdamW, LAMB; f32 parameters), ClipByGlobalNorm (f32, f16, bf16) and
// Assign (any float type): the semantics of the CPU kernels
// (ops/optimizer/optimizer_kernels.h), in place where they are in place.
//
// lr, step and skip stay on the device and are read there (no host round
// trip per step). What the CPU kernel reports as an error but the device
// can only see: a step below 1 leaves the parameter and state unchanged.
// ClipByGlobalNorm's outputs are always fresh tensors (the CPU's alias the
// inputs when nothing is clipped: the same values, since whether anything
// is clipped is known only on the device).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_optimizer_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
