// Every CUDA kernel family of ops/cuda, registered under DeviceType::kCuda.
// register_all_kernels() (ops/register_ops.h) calls this in builds with the
// CUDA backend; this header needs no CUDA headers.
#pragma once

#include "ops/kernel.h"

namespace weir {

// Calls each CUDA family's register_*_cuda_kernels(); a new family adds one line here.
void register_all_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
