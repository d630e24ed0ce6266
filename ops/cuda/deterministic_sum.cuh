// Block-wide sums in f64 whose result depends only on the values and the
// block size, never on timing: a fixed tree over shared memory (no atomics),
// so a loss or a norm reduced on the GPU is the same number on every run.
// The CPU kernels these mirror sum in f64 too (in another order; the two
// agree to ~1e-16 relative before rounding to the output type).
#pragma once

namespace weir::cuda {

// Every thread of a block of exactly kThreads (a power of two) threads gets
// the sum of every thread's `value`. All threads must call it.
template <int kThreads>
__device__ double block_sum(double value) {
  static_assert((kThreads & (kThreads - 1)) == 0, "kThreads must be a power of two");
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const double sum = partial[0];
  __syncthreads();  // the next call may overwrite `partial`
  return sum;
}

// As block_sum, the largest value; NaN is skipped as the CPU's
// std::max(max, x) from -infinity skips it.
template <int kThreads>
__device__ double block_max(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] = fmax(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  const double max = partial[0];
  __syncthreads();
  return max;
}

}  // namespace weir::cuda
