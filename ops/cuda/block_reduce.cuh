// Reductions across the threads of one block, for device code: every thread
// passes its partial value and every thread gets the block's result. The
// order of the additions depends only on blockDim, so a result is the same
// on every run (no atomics). blockDim.x must be a multiple of 32, at most 1024.
#pragma once

namespace weir::cuda {

struct SumOp {
  __device__ static float identity() { return 0.0f; }
  __device__ static float combine(float a, float b) { return a + b; }
};

// fmaxf skips NaN, as the CPU's std::max from -infinity does.
struct MaxOp {
  __device__ static float identity() { return -INFINITY; }
  __device__ static float combine(float a, float b) { return fmaxf(a, b); }
};

template <typename Op>
__device__ inline float warp_reduce(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

template <typename Op>
__device__ inline float block_reduce(float value) {
  __shared__ float partial[32];
  value = warp_reduce<Op>(value);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // the previous reduction's readers are done with `partial`
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / 32;
  value = lane < warps ? partial[lane] : Op::identity();
  return warp_reduce<Op>(value);
}

// Threads for a block that walks a line of `n` elements: enough whole warps
// for the line, a power of two, at most `limit`.
inline int threads_for_line(long long n, int limit) {
  int threads = 32;
  while (threads < limit && threads < n) threads *= 2;
  return threads;
}

}  // namespace weir::cuda
