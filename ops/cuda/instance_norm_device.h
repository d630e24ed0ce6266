// The device side of the CUDA InstanceNormalization and InstanceNormGrad
// kernels (instance_norm_device.cu): X [N, C, spatial...] seen as N * C
// planes of `len` contiguous elements, a block per plane; plane p's
// channel is p % channels. Statistics are two-pass in f32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// y = x * a + b per plane, a = rstd * scale[c], b = bias[c] - mean * a
// (the CPU kernel's order), rstd = 1 / sqrt(variance + epsilon); scale and
// bias (nullptr: zeros) hold `channels` values of x's type. Needs planes * len > 0.
void launch_instance_norm(ElementType type, const void* x, const void* scale, const void* bias, void* y,
                          int64_t planes, int64_t channels, int64_t len, float epsilon, cudaStream_t stream);

// Device memory launch_instance_norm_grad needs for `planes` planes.
size_t instance_norm_grad_workspace_bytes(int64_t planes);

// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) per plane,
// dxhat = dy * scale[c]; dscale[c] = sum of dy * xhat and dbias[c] = sum of
// dy over the planes of channel c, added plane by plane in batch order
// (deterministic). Needs channels > 0; planes * len may be 0 (then dscale
// and dbias are zeros).
void launch_instance_norm_grad(ElementType type, const void* dy, const void* x, const void* scale, void* dx,
                               void* dscale, void* dbias, int64_t planes, int64_t channels, int64_t len, float epsilon,
                               void* workspace, cudaStream_t stream);

}  // namespace weir::cuda
