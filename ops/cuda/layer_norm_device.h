// The device side of the CUDA LayerNormalization and LayerNormGrad kernels
// (layer_norm_device.cu): the input seen as [rows, len], the normalized
// axes flattened, each row normalized by a block of its own. Statistics are
// two-pass (mean, then the mean of squared deviations) in f32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// y = (x - mean) * inv_std_dev * scale + bias per row, inv_std_dev =
// 1 / sqrt(variance + epsilon). scale and bias (nullptr: none) hold len
// values of x's type; mean and inv_std_dev (nullptr: not wanted) receive
// one f32 per row. Needs rows * len > 0.
void launch_layer_norm(ElementType type, const void* x, const void* scale, const void* bias, void* y, float* mean,
                       float* inv_std_dev, int64_t rows, int64_t len, float epsilon, cudaStream_t stream);

// Device memory launch_layer_norm_grad needs for rows x len.
size_t layer_norm_grad_workspace_bytes(int64_t rows, int64_t len);

// The gradients of y = LayerNorm(x) * scale + bias given dy (all [rows, len]
// but scale, dscale, dbias: len values of x's type), the statistics
// recomputed from x:
//   dx = inv_std_dev * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * scale
//   dscale = sum over rows of dy * xhat, dbias = sum over rows of dy
// The column sums add per-chunk partials in chunk order (deterministic).
// `workspace` holds layer_norm_grad_workspace_bytes(rows, len). Needs len > 0
// (rows may be 0: dscale and dbias are then zeros).
void launch_layer_norm_grad(ElementType type, const void* dy, const void* x, const void* scale, void* dx, void* dscale,
                            void* dbias, int64_t rows, int64_t len, float epsilon, void* workspace, cudaStream_t stream);

}  // namespace weir::cuda
