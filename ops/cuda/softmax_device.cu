#include "ops/cuda/softmax_device.h"

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

namespace {

// MaxOp (fmaxf), like the CPU's std::max(max, x) from -infinity, skips NaN
// inputs; a NaN still reaches every output of its line through the sum.
using Max = MaxOp;
using Sum = SumOp;

// inner == 1: a block per line of n contiguous elements.
template <typename T, bool kLog>
__global__ void softmax_lines(const T* x, T* y, int64_t lines, int64_t n) {
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const T* in = x + line * n;
    T* out = y + line * n;
    float max = Max::identity();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) max = Max::combine(max, load(in[j]));
    max = block_reduce<Max>(max);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += expf(load(in[j]) - max);
    sum = block_reduce<Sum>(sum);
    if constexpr (kLog) {
      const float log_sum = logf(sum);
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) out[j] = store<T>(load(in[j]) - max - log_sum);
    } else {
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) out[j] = store<T>(expf(load(in[j]) - max) / sum);
    }
  }
}

// inner > 1: a thread per line; neighbouring threads read neighbouring
// elements, so each step along the axis is one coalesced read.
template <typename T, bool kLog>
__global__ void softmax_strided_lines(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  const int64_t lines = outer * inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines; line += step) {
    const int64_t base = (line / inner) * n * inner + line % inner;
    float max = Max::identity();
    for (int64_t j = 0; j < n; ++j) max = Max::combine(max, load(x[base + j * inner]));
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) sum += expf(load(x[base + j * inner]) - max);
    if constexpr (kLog) {
      const float log_sum = logf(sum);
      for (int64_t j = 0; j < n; ++j) y[base + j * inner] = store<T>(load(x[base + j * inner]) - max - log_sum);
    } else {
      for (int64_t j = 0; j < n; ++j) y[base + j * inner] = store<T>(expf(load(x[base + j * inner]) - max) / sum);
    }
  }
}

template <typename T, bool kLog>
void softmax_as(const void* x, void* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  T* out = static_cast<T*>(y);
  if (inner == 1) {
    // Enough threads for the line, in whole warps, at most 256.
    const int threads = threads_for_line(n, 256);
    const int blocks = static_cast<int>(outer < kMaxBlocks ? outer : kMaxBlocks);
    softmax_lines<T, kLog><<<blocks, threads, 0, stream>>>(in, out, outer, n);
  } else {
    softmax_strided_lines<T, kLog><<<blocks_for(outer * inner), kThreads, 0, stream>>>(in, out, outer, n, inner);
  }
}

template <bool kLog>
void softmax_typed(ElementType type, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                   cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32: return softmax_as<float, kLog>(x, y, outer, n, inner, stream);
    case ElementType::kFloat16: return softmax_as<__half, kLog>(x, y, outer, n, inner, stream);
    case ElementType::kBFloat16: return softmax_as<__nv_bfloat16, kLog>(x, y, outer, n, inner, stream);
  }
}

}  // namespace

void launch_softmax(bool log, ElementType type, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                    cudaStream_t stream) {
  if (log) {
    softmax_typed<true>(type, x, y, outer, n, inner, stream);
  } else {
    softmax_typed<false>(type, x, y, outer, n, inner, stream);
  }
}

}  // namespace weir::cuda
