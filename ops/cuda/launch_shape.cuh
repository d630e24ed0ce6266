// The launch shape of a grid-stride loop over `count` elements, which most
// CUDA kernels here use: kThreads threads a block, at most kMaxBlocks
// blocks, and each thread steps by the whole grid.
//
//   my_kernel<<<blocks_for(count), kThreads, 0, stream>>>(..., count);
//   for (int64_t i = global_index(); i < count; i += grid_stride()) ...   // in the kernel
#pragma once

#include <cstdint>

namespace weir::cuda {

inline constexpr int kThreads = 256;
// Enough blocks to fill an H100 several times over; larger tensors are
// covered by the grid-stride loops.
inline constexpr int64_t kMaxBlocks = 65536;

inline int blocks_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

#ifdef __CUDACC__
__device__ inline int64_t global_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }
#endif

}  // namespace weir::cuda
