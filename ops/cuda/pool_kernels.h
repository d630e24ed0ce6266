// CUDA kernels of MaxPool (with the optional Indices output and
// storage_order), AveragePool, MaxPoolGrad, AveragePoolGrad,
// GlobalAveragePool and GlobalMaxPool; f32, f16 and bf16 (computing in
// f32). Own kernels, not cuDNN's pooling (pool_device.h says why); the
// windows, tie-breaking, NaN handling, checks and messages are the CPU
// kernels' (ops/nn/pool_kernels.h).
#pragma once

#include "ops/cuda/pool_windows.h"
#include "ops/kernel.h"
#include "ops/nn/conv_problem.h"

namespace weir {

void register_pool_cuda_kernels(KernelRegistry& registry);

// The windows of a pooling problem (pool_problem.h) as the device kernels take them.
cuda::PoolWindows pool_windows_of(const ConvProblem& p);

}  // namespace weir
