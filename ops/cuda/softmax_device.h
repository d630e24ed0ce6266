// The device side of the CUDA Softmax and LogSoftmax kernels
// (softmax_device.cu): the tensor seen as [outer, n, inner] around the axis,
// each of the outer * inner lines normalized over its n elements.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// y = softmax (or log-softmax, `log`) of x along the middle axis; x and y
// may be the same memory. Needs outer * n * inner > 0.
void launch_softmax(bool log, ElementType type, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                    cudaStream_t stream);

}  // namespace weir::cuda
