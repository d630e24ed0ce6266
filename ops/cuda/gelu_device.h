// The device side of the CUDA Gelu and GeluGrad kernels (gelu_device.cu),
// both forms: the exact x * Phi(x) through erf, and the tanh approximation.
// The formulas are the CPU's (ops/elementwise/activation_functions.h,
// GeluFunction), evaluated in f32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

enum class GeluForm { kErf, kTanh };

// y[i] = gelu(x[i]) for i < count (count > 0).
void launch_gelu(GeluForm form, ElementType type, const void* x, void* y, int64_t count, cudaStream_t stream);
// dx[i] = dy[i] * gelu'(x[i]) for i < count (count > 0).
void launch_gelu_grad(GeluForm form, ElementType type, const void* dy, const void* x, void* dx, int64_t count,
                      cudaStream_t stream);

}  // namespace weir::cuda
