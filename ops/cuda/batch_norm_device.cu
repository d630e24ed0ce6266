#include "ops/cuda/batch_norm_device.h"

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

// Element e (of batch * plane) of channel c.
__device__ inline int64_t element(int64_t c, int64_t e, int64_t channels, int64_t plane) {
  return ((e / plane) * channels + c) * plane + e % plane;
}

template <typename T>
__device__ void channel_stats(const T* x, int64_t c, int64_t channels, int64_t plane, int64_t count, double& mean,
                              double& var) {
  double sum[1] = {0.0};
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) sum[0] += static_cast<double>(load(x[element(c, e, channels, plane)]));
  block_sum(sum);
  mean = count > 0 ? sum[0] / static_cast<double>(count) : 0.0;
  double squares[1] = {0.0};
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const double d = static_cast<double>(load(x[element(c, e, channels, plane)])) - mean;
    squares[0] += d * d;
  }
  block_sum(squares);
  var = count > 0 ? squares[0] / static_cast<double>(count) : 0.0;
}

template <typename T>
__global__ void batch_norm_stats(const T* x, int64_t batch, int64_t channels, int64_t plane, double* mean, double* var) {
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double m = 0.0, v = 0.0;
    channel_stats(x, c, channels, plane, batch * plane, m, v);
    if (threadIdx.x == 0) {
      mean[c] = m;
      var[c] = v;
    }
  }
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

template <typename T>
__global__ void batch_norm_grad(const T* dy, const T* x, const T* scale, const double* mean, const double* var,
                                double epsilon, bool batch_stats, T* dx, T* dscale, T* dbias, int64_t batch,
                                int64_t channels, int64_t plane) {
  const int64_t count = batch * plane;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const double m = mean[c];
    const double r = 1.0 / sqrt(__dadd_rn(var[c], epsilon));
    const double s = static_cast<double>(load(scale[c]));
    // sums: dxhat, dxhat * xhat, dy * xhat, dy.
    double sums[4] = {0.0, 0.0, 0.0, 0.0};
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
      const int64_t i = element(c, e, channels, plane);
      const double xhat = (static_cast<double>(load(x[i])) - m) * r;
      const double grad = static_cast<double>(load(dy[i]));
      const double dxhat = grad * s;
      sums[0] += dxhat;
      sums[1] += dxhat * xhat;
      sums[2] += grad * xhat;
      sums[3] += grad;
    }
    block_sum(sums);
    const double n = static_cast<double>(count);
    const double mean_dxhat = batch_stats && count > 0 ? sums[0] / n : 0.0;
    const double mean_dxhat_xhat = batch_stats && count > 0 ? sums[1] / n : 0.0;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
      const int64_t i = element(c, e, channels, plane);
      const double xhat = (static_cast<double>(load(x[i])) - m) * r;
      const double dxhat = static_cast<double>(load(dy[i])) * s;
      dx[i] = store<T>(static_cast<float>(r * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat)));
    }
    if (threadIdx.x == 0) {
      dscale[c] = store<T>(static_cast<float>(sums[2]));
      dbias[c] = store<T>(static_cast<float>(sums[3]));
    }
  }
}

int channel_blocks(int64_t channels) { return static_cast<int>(channels < kMaxBlocks ? channels : kMaxBlocks); }

}  // namespace

void launch_batch_norm_stats(ElementType type, const void* x, int64_t batch, int64_t channels, int64_t plane,
                             double* mean, double* var, cudaStream_t stream) {
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    batch_norm_stats<T><<<channel_blocks(channels), kThreads, 0, stream>>>(static_cast<const T*>(x), batch, channels,
                                                                           plane, mean, var);
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
                            int64_t batch, int64_t channels, int64_t plane, cudaStream_t stream) {
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    batch_norm_grad<T><<<channel_blocks(channels), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(scale), mean, var, epsilon,
        batch_stats, static_cast<T*>(dx), static_cast<T*>(dscale), static_cast<T*>(dbias), batch, channels, plane);
  });
}

}  // namespace weir::cuda
