// The device side of the CUDA kernels of the elementwise backward ops
// (elementwise_grad_device.cu): <Activation>Grad(dY, X) = dY * f'(X) and
// ClipGrad and PReluGrad. ReluGrad, SigmoidGrad and TanhGrad are binary ops
// (elementwise_device.h). Same-shape operands, count > 0.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// dx[i] = dy[i] * f'(x[i]) for the activation `op` (one of those with a
// derivative in scalar_functions.cuh), its attributes in `params`.
void launch_activation_grad(UnaryOp op, ElementType type, const void* dy, const void* x, void* dx, int64_t count,
                            UnaryParams params, cudaStream_t stream);

// dx[i] = dy[i] where bounds.alpha <= x[i] <= bounds.beta, else 0; a bound
// whose pointer is not null is read from device memory instead.
void launch_clip_grad(ElementType type, const void* dy, const void* x, void* dx, int64_t count, UnaryParams bounds,
                      const void* low, const void* high, cudaStream_t stream);

// PReluGrad: dx = dy where x >= 0, else dy * slope; dslope = dy * x where
// x < 0, else 0. dy, x, dx and dslope have the output's shape; the slope is
// read through stride_b of `indexing` (stride_a: x's own, contiguous).
void launch_prelu_grad(ElementType type, const void* dy, const void* x, const void* slope, void* dx, void* dslope,
                       int64_t count, const BroadcastIndexing& indexing, cudaStream_t stream);

}  // namespace weir::cuda
