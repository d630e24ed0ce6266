// The device side of the CUDA pooling kernels (pool_device.cu). The windows
// are those of the CPU kernels (ops/nn/pool_kernels.cc, pool_problem.h):
// any pads (asymmetric too), dilations, ceil_mode windows that reach into
// the end padding, count_include_pad counting the taps inside the padded
// input; maxima pick the first maximal tap in window order, a NaN winning.
// These are own kernels rather than cuDNN's pooling, which has no
// dilation, no asymmetric pads and no indices, and breaks ties its own way.
//
// The backward kernels gather: one thread per input element visits the
// windows that contain it in ascending output order, so each sum is formed
// in the CPU's order, without atomics (deterministic).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"
#include "ops/cuda/pool_windows.h"

namespace weir::cuda {

// y = the first maximum of each window (-inf for a window wholly in the
// padding); indices (null: not wanted) = plane * in_plane + the offset
// within the plane, column-major there when column_major (storage_order 1).
// Needs planes * out_plane > 0.
void launch_max_pool(ElementType type, const void* x, void* y, int64_t* indices, const PoolWindows& w,
                     bool column_major, cudaStream_t stream);
// y = the mean of each window's taps inside the input, divided by the taps
// inside the padded input when include_pad.
void launch_average_pool(ElementType type, const void* x, void* y, const PoolWindows& w, bool include_pad,
                         cudaStream_t stream);
// dx = the sum of dy over the windows whose first maximum each x is.
// Needs planes * in_plane > 0.
void launch_max_pool_grad(ElementType type, const void* x, const void* dy, void* dx, const PoolWindows& w,
                          cudaStream_t stream);
// dx = the sum of dy / count over the windows each x lies in.
void launch_average_pool_grad(ElementType type, const void* dy, void* dx, const PoolWindows& w, bool include_pad,
                              cudaStream_t stream);
// y[p] = the mean (or, max, the maximum; NaN if any is) of plane p's
// `plane` elements; planes > 0 (plane may be 0 for the mean: y is 0).
void launch_global_pool(bool max, ElementType type, const void* x, void* y, int64_t planes, int64_t plane,
                        cudaStream_t stream);

}  // namespace weir::cuda
