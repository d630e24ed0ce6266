#include "ops/cuda/softmax_grad_device.h"

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/elementwise_dispatch.cuh"
#include "ops/cuda/scalar_functions.cuh"

namespace weir::cuda {

namespace {

// Every thread of the block gets the sum of every thread's `value`, in a
// fixed order (deterministic run to run). blockDim.x: a multiple of 32.
__device__ float block_sum(float value) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2) value = add_rn(value, __shfl_xor_sync(0xffffffffu, value, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / 32;
  value = lane < warps ? partial[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) value = add_rn(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();  // every warp has read `partial` before the next line's reduction writes it
  return value;
}

// The summand of element j and dX from it and the line's sum, as the CPU
// computes them (each product and difference rounded on its own).
template <bool kLog>
__device__ inline float summand(float g, float y) {
  return kLog ? g : mul_rn(g, y);
}
template <bool kLog>
__device__ inline float grad(float g, float y, float dot) {
  return kLog ? sub_rn(g, mul_rn(expf(y), dot)) : mul_rn(y, sub_rn(g, dot));
}

// inner == 1: a block per line of n contiguous elements.
template <typename T, bool kLog>
__global__ void softmax_grad_lines(const T* dy, const T* y, T* dx, int64_t lines, int64_t n) {
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const int64_t base = line * n;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) dot = add_rn(dot, summand<kLog>(load(dy[base + j]), load(y[base + j])));
    dot = block_sum(dot);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      dx[base + j] = store<T>(grad<kLog>(load(dy[base + j]), load(y[base + j]), dot));
    }
  }
}

// inner > 1: a thread per line, summing in the CPU's order; neighbouring
// threads read neighbouring elements, so each step along the axis is one
// coalesced read.
template <typename T, bool kLog>
__global__ void softmax_grad_strided_lines(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner) {
  const int64_t lines = outer * inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines; line += step) {
    const int64_t base = (line / inner) * n * inner + line % inner;
    float dot = 0.0f;
    for (int64_t j = 0; j < n; ++j) dot = add_rn(dot, summand<kLog>(load(dy[base + j * inner]), load(y[base + j * inner])));
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = base + j * inner;
      dx[at] = store<T>(grad<kLog>(load(dy[at]), load(y[at]), dot));
    }
  }
}

template <typename T, bool kLog>
void softmax_grad_as(const void* dy, const void* y, void* dx, int64_t outer, int64_t n, int64_t inner,
                     cudaStream_t stream) {
  const T* g = static_cast<const T*>(dy);
  const T* out = static_cast<const T*>(y);
  T* result = static_cast<T*>(dx);
  if (inner == 1) {
    // Enough threads for the line, in whole warps, at most 256.
    int threads = 32;
    while (threads < 256 && threads < n) threads *= 2;
    const int blocks = static_cast<int>(outer < kMaxBlocks ? outer : kMaxBlocks);
    softmax_grad_lines<T, kLog><<<blocks, threads, 0, stream>>>(g, out, result, outer, n);
  } else {
    softmax_grad_strided_lines<T, kLog><<<blocks_for(outer * inner), kThreads, 0, stream>>>(g, out, result, outer, n,
                                                                                             inner);
  }
}

}  // namespace

void launch_softmax_grad(bool log, ElementType type, const void* dy, const void* y, void* dx, int64_t outer, int64_t n,
                         int64_t inner, cudaStream_t stream) {
  dispatch_type(type, [&]<typename T>() {
    if (log) {
      softmax_grad_as<T, true>(dy, y, dx, outer, n, inner, stream);
    } else {
      softmax_grad_as<T, false>(dy, y, dx, outer, n, inner, stream);
    }
  });
}

}  // namespace weir::cuda
