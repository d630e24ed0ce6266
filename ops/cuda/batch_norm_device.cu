#include "ops/cuda/batch_norm_device.h"

#include <cstdint>

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

namespace {

// Sums kValues per-thread values over the block, in a fixed order; every
// thread gets the totals. blockDim.x == kThreads.
template <int kValues>
__device__ void block_sum(double (&values)[kValues]) {
  __shared__ double partial[kValues][kThreads];
  __syncthreads();  // the previous call's readers are done with `partial`
  for (int v = 0; v < kValues; ++v) partial[v][threadIdx.x] = values[v];
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      for (int v = 0; v < kValues; ++v) partial[v][threadIdx.x] += partial[v][threadIdx.x + half];
    }
    __syncthreads();
  }
  for (int v = 0; v < kValues; ++v) values[v] = partial[v][0];
}

// Channel c's N * plane elements are summed by several blocks, each over a
// chunk of whole planes (a channel alone on one block of an H100's 132 SMs
// would take milliseconds for ResNet's early layers); a second kernel adds
// each channel's chunk sums in chunk order. The chunks follow the shape
// only, so the result is the same every run.
struct Chunks {
  int64_t planes = 1;  // batch entries (planes of the channel) per chunk
  int64_t count = 1;   // chunks per channel
};

// About 64K elements a chunk; at least one chunk, also for an empty batch.
inline Chunks chunks_of(int64_t batch, int64_t plane) {
  constexpr int64_t kChunkElements = int64_t{1} << 16;
  Chunks c;
  c.planes = plane >= kChunkElements ? 1 : kChunkElements / (plane > 0 ? plane : 1);
  c.count = batch > 0 ? (batch + c.planes - 1) / c.planes : 1;
  return c;
}

// The sums this block adds over its chunk of its channel (block b is chunk
// b % chunks of channel b / chunks), each of the kValues values that
// `term(i)` gives for element index i of x, in a fixed order; written to
// partial[b * kValues + v].
template <int kValues, typename Term>
__device__ void chunk_sums(int64_t batch, int64_t channels, int64_t plane, Chunks chunks, double* partial, Term term) {
  const int64_t block = blockIdx.x;
  const int64_t c = block / chunks.count, k = block % chunks.count;
  const int64_t first = k * chunks.planes;
  const int64_t last = first + chunks.planes < batch ? first + chunks.planes : batch;
  // Local element j of the chunk is position j % plane of its plane
  // first + j / plane: 32-bit division (far cheaper on a GPU) unless a
  // single plane is too large for it.
  const int64_t elements = (last > first ? last - first : 0) * plane;
  double sums[kValues] = {};
  if (elements <= INT32_MAX) {
    const auto span = static_cast<uint32_t>(elements), width = static_cast<uint32_t>(plane);
    for (uint32_t j = threadIdx.x; j < span; j += blockDim.x) {
      term(((first + j / width) * channels + c) * plane + j % width, sums);
    }
  } else {
    for (int64_t j = threadIdx.x; j < elements; j += blockDim.x) term(((first + j / plane) * channels + c) * plane + j % plane, sums);
  }
  block_sum(sums);
  if (threadIdx.x == 0) {
    for (int v = 0; v < kValues; ++v) partial[block * kValues + v] = sums[v];
  }
}

// out[c * kValues + v] = the sum over chunks, in order, of channel c's
// partial sums, divided by `count` when it is positive (a mean over the
// channel's elements; 0 for a channel of none, whose sums are 0).
template <int kValues>
__global__ void combine_chunks(const double* partial, int64_t channels, int64_t chunks, int64_t count, double* out) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double sums[kValues] = {};
    for (int64_t k = 0; k < chunks; ++k) {
      for (int v = 0; v < kValues; ++v) sums[v] += partial[(c * chunks + k) * kValues + v];
    }
    for (int v = 0; v < kValues; ++v) out[c * kValues + v] = count > 0 ? sums[v] / static_cast<double>(count) : sums[v];
  }
}

// Pass 1: sum of x; pass 2 (`mean` given): sum of (x - mean)^2.
template <typename T>
__global__ void stats_partials(const T* x, const double* mean, int64_t batch, int64_t channels, int64_t plane,
                               Chunks chunks, double* partial) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) / chunks.count;
  const double m = mean != nullptr ? mean[c] : 0.0;
  chunk_sums<1>(batch, channels, plane, chunks, partial, [&](int64_t i, double (&sums)[1]) {
    const double value = static_cast<double>(load(x[i]));
    if (mean == nullptr) {
      sums[0] += value;
    } else {
      const double d = value - m;
      sums[0] += d * d;
    }
  });
}

template <typename T>
__global__ void to_f64(const T* src, double* dst, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = static_cast<double>(load(src[i]));
  }
}

template <typename T>
__global__ void batch_norm_coefficients(const T* scale, const T* bias, const double* mean, const double* var,
                                        double epsilon, int64_t channels, float* a, float* b) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double rstd = 1.0 / sqrt(__dadd_rn(var[c], epsilon));
    const float r = static_cast<float>(rstd), m = static_cast<float>(mean[c]);
    const float scaled = __fmul_rn(r, load(scale[c]));
    a[c] = scaled;
    b[c] = __fsub_rn(bias != nullptr ? load(bias[c]) : 0.0f, __fmul_rn(m, scaled));
  }
}

template <typename T>
__global__ void batch_norm_apply(const T* x, const float* a, const float* b, T* y, int64_t channels, int64_t plane,
                                 int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = (i / plane) % channels;
    y[i] = store<T>(__fadd_rn(__fmul_rn(load(x[i]), a[c]), b[c]));
  }
}

template <typename T>
__global__ void running_statistic(const T* running, const double* batch_value, double momentum, bool update, T* out,
                                  int64_t channels) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double value = static_cast<double>(load(running[c]));
    if (update) value = __dadd_rn(__dmul_rn(value, momentum), __dmul_rn(batch_value[c], __dsub_rn(1.0, momentum)));
    out[c] = store<T>(static_cast<float>(value));
  }
}

// BatchNormGrad's per-chunk sums: dxhat, dxhat * xhat, dy * xhat, dy.
template <typename T>
__global__ void grad_partials(const T* dy, const T* x, const T* scale, const double* mean, const double* var,
                              double epsilon, int64_t batch, int64_t channels, int64_t plane, Chunks chunks,
                              double* partial) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) / chunks.count;
  const double m = mean[c];
  const double r = 1.0 / sqrt(__dadd_rn(var[c], epsilon));
  const double s = static_cast<double>(load(scale[c]));
  chunk_sums<4>(batch, channels, plane, chunks, partial, [&](int64_t i, double (&sums)[4]) {
    const double xhat = (static_cast<double>(load(x[i])) - m) * r;
    const double grad = static_cast<double>(load(dy[i]));
    const double dxhat = grad * s;
    sums[0] += dxhat;
    sums[1] += dxhat * xhat;
    sums[2] += grad * xhat;
    sums[3] += grad;
  });
}

// dx per element from the channel sums; dscale and dbias per channel.
template <typename T>
__global__ void grad_apply(const T* dy, const T* x, const T* scale, const double* mean, const double* var,
                           double epsilon, bool batch_stats, const double* sums, T* dx, int64_t channels, int64_t plane,
                           int64_t count) {
  const double n = count > 0 ? static_cast<double>(count / channels) : 1.0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = (i / plane) % channels;
    const double m = mean[c];
    const double r = 1.0 / sqrt(__dadd_rn(var[c], epsilon));
    const double mean_dxhat = batch_stats ? sums[c * 4] / n : 0.0;
    const double mean_dxhat_xhat = batch_stats ? sums[c * 4 + 1] / n : 0.0;
    const double xhat = (static_cast<double>(load(x[i])) - m) * r;
    const double dxhat = static_cast<double>(load(dy[i])) * static_cast<double>(load(scale[c]));
    dx[i] = store<T>(static_cast<float>(r * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat)));
  }
}

template <typename T>
__global__ void grad_parameters(const double* sums, T* dscale, T* dbias, int64_t channels) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dscale[c] = store<T>(static_cast<float>(sums[c * 4 + 2]));
    dbias[c] = store<T>(static_cast<float>(sums[c * 4 + 3]));
  }
}

}  // namespace

int64_t batch_norm_workspace_doubles(int64_t batch, int64_t channels, int64_t plane) {
  return channels * chunks_of(batch, plane).count * 4 + channels * 4;
}

void launch_batch_norm_stats(ElementType type, const void* x, int64_t batch, int64_t channels, int64_t plane,
                             double* mean, double* var, double* workspace, cudaStream_t stream) {
  const Chunks chunks = chunks_of(batch, plane);
  const unsigned blocks = static_cast<unsigned>(channels * chunks.count);
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    // The mean first, then the squared deviations from it (two passes, as the CPU).
    stats_partials<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), nullptr, batch, channels, plane, chunks,
                                                      workspace);
    combine_chunks<1><<<blocks_for(channels), kThreads, 0, stream>>>(workspace, channels, chunks.count, batch * plane, mean);
    stats_partials<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), mean, batch, channels, plane, chunks,
                                                      workspace);
    combine_chunks<1><<<blocks_for(channels), kThreads, 0, stream>>>(workspace, channels, chunks.count, batch * plane, var);
  });
}

void launch_to_f64(ElementType type, const void* src, double* dst, int64_t count, cudaStream_t stream) {
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    to_f64<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(src), dst, count);
  });
}

void launch_batch_norm_coefficients(ElementType type, const void* scale, const void* bias, const double* mean,
                                    const double* var, double epsilon, int64_t channels, float* a, float* b,
                                    cudaStream_t stream) {
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    batch_norm_coefficients<T><<<blocks_for(channels), kThreads, 0, stream>>>(
        static_cast<const T*>(scale), static_cast<const T*>(bias), mean, var, epsilon, channels, a, b);
  });
}

void launch_batch_norm_apply(ElementType type, const void* x, const float* a, const float* b, void* y, int64_t batch,
                             int64_t channels, int64_t plane, cudaStream_t stream) {
  const int64_t count = batch * channels * plane;
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    batch_norm_apply<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), a, b, static_cast<T*>(y),
                                                                    channels, plane, count);
  });
}

void launch_running_statistic(ElementType type, const void* running, const double* batch_value, double momentum,
                              bool update, void* out, int64_t channels, cudaStream_t stream) {
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    running_statistic<T><<<blocks_for(channels), kThreads, 0, stream>>>(static_cast<const T*>(running), batch_value,
                                                                        momentum, update, static_cast<T*>(out), channels);
  });
}

void launch_batch_norm_grad(ElementType type, const void* dy, const void* x, const void* scale, const double* mean,
                            const double* var, double epsilon, bool batch_stats, void* dx, void* dscale, void* dbias,
                            int64_t batch, int64_t channels, int64_t plane, double* workspace, cudaStream_t stream) {
  const Chunks chunks = chunks_of(batch, plane);
  const unsigned blocks = static_cast<unsigned>(channels * chunks.count);
  double* sums = workspace + channels * chunks.count * 4;
  const int64_t count = batch * channels * plane;
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    grad_partials<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<const T*>(x),
                                                     static_cast<const T*>(scale), mean, var, epsilon, batch, channels,
                                                     plane, chunks, workspace);
    combine_chunks<4><<<blocks_for(channels), kThreads, 0, stream>>>(workspace, channels, chunks.count, 0, sums);
    if (count > 0) {
      grad_apply<T><<<blocks_for(count), kThreads, 0, stream>>>(
          static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(scale), mean, var, epsilon,
          batch_stats, sums, static_cast<T*>(dx), channels, plane, count);
    }
    grad_parameters<T><<<blocks_for(channels), kThreads, 0, stream>>>(sums, static_cast<T*>(dscale),
                                                                     static_cast<T*>(dbias), channels);
  });
}

}  // namespace weir::cuda
