// The device side of the CUDA Dropout and DropoutGrad kernels
// (dropout_device.cu). The random stream is the CPU kernel's
// (ops/nn/dropout.h): element i keeps when the top 53 bits of
// splitmix64_mix(stream + i), as a fraction in [0, 1), are >= ratio, so a
// GPU mask equals the CPU's bit for bit for the same stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// y[i] = keep(i) ? x[i] * scale : 0, and mask[i] = keep(i) when mask is not
// nullptr, for i < count (count > 0). `scale` is 1 / (1 - ratio) rounded to f32.
void launch_dropout(ElementType type, const void* x, void* y, bool* mask, int64_t count, uint64_t stream_key,
                    double ratio, float scale, cudaStream_t stream);
// dx[i] = mask[i] ? dy[i] * scale : 0 for i < count (count > 0).
void launch_dropout_grad(ElementType type, const void* dy, const bool* mask, void* dx, int64_t count, float scale,
                         cudaStream_t stream);

}  // namespace weir::cuda
