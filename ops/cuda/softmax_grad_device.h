// The device side of the CUDA SoftmaxGrad and LogSoftmaxGrad kernels
// (softmax_grad_device.cu): the tensors seen as [outer, n, inner] around the
// axis; each of the outer * inner lines reduces dY (* Y) over its n
// elements, then writes dX along it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// SoftmaxGrad: dx = y * (dy - sum(dy * y)); LogSoftmaxGrad (`log`):
// dx = dy - exp(y) * sum(dy), sums along the middle axis. dx may be dy's
// or y's memory. Needs outer * n * inner > 0.
void launch_softmax_grad(bool log, ElementType type, const void* dy, const void* y, void* dx, int64_t outer, int64_t n,
                         int64_t inner, cudaStream_t stream);

}  // namespace weir::cuda
