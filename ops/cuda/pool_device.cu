#include "ops/cuda/pool_device.h"

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

namespace {

template <typename T>
__global__ void max_pool(const T* x, T* y, int64_t* indices, PoolWindows w, bool column_major, int64_t count) {
  const int64_t in_size = w.in_plane(), out_size = w.out_plane();
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const int64_t plane = i / out_size;
    int64_t o[3];
    pool::output_coordinates(w, i % out_size, o);
    const T* src = x + plane * in_size;
    const int64_t best = pool::first_max(w, [&](int64_t tap) { return load(src[tap]); }, o);
    // A window wholly in the padding: -inf.
    y[i] = best < 0 ? store<T>(-INFINITY) : src[best];
    if (indices != nullptr) indices[i] = plane * in_size + pool::index_offset(w, best, column_major);
  }
}

template <typename T>
__global__ void average_pool(const T* x, T* y, PoolWindows w, bool include_pad, int64_t count) {
  const int64_t in_size = w.in_plane(), out_size = w.out_plane();
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const int64_t plane = i / out_size;
    int64_t o[3];
    pool::output_coordinates(w, i % out_size, o);
    const T* src = x + plane * in_size;
    y[i] = store<T>(pool::average(w, [&](int64_t tap) { return load(src[tap]); }, o, include_pad));
  }
}

template <typename T>
__global__ void max_pool_grad(const T* x, const T* dy, T* dx, PoolWindows w, int64_t count) {
  const int64_t in_size = w.in_plane(), out_size = w.out_plane();
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const int64_t plane = i / in_size;
    const T* src = x + plane * in_size;
    const T* grad = dy + plane * out_size;
    dx[i] = store<T>(pool::max_pool_grad(w, [&](int64_t tap) { return load(src[tap]); },
                                         [&](int64_t offset) { return load(grad[offset]); }, i % in_size));
  }
}

template <typename T>
__global__ void average_pool_grad(const T* dy, T* dx, PoolWindows w, bool include_pad, int64_t count) {
  const int64_t in_size = w.in_plane(), out_size = w.out_plane();
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const T* grad = dy + (i / in_size) * out_size;
    dx[i] = store<T>(pool::average_pool_grad(w, [&](int64_t offset) { return load(grad[offset]); }, i % in_size,
                                             include_pad));
  }
}

__device__ inline float nan_max(float a, float b) { return isnan(a) || isnan(b) ? NAN : fmaxf(a, b); }

// One block per plane, threads combining strided shares, then the block's
// partials in a fixed order.
template <typename T, bool kMax>
__global__ void global_pool(const T* x, T* y, int64_t planes, int64_t plane) {
  __shared__ float partial[kThreads];
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const T* src = x + p * plane;
    float value = kMax ? -INFINITY : 0.0f;
    for (int64_t e = threadIdx.x; e < plane; e += blockDim.x) {
      const float v = load(src[e]);
      value = kMax ? nan_max(value, v) : value + v;
    }
    __syncthreads();
    partial[threadIdx.x] = value;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (static_cast<int>(threadIdx.x) < half) {
        const float other = partial[threadIdx.x + half];
        partial[threadIdx.x] = kMax ? nan_max(partial[threadIdx.x], other) : partial[threadIdx.x] + other;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const float result = partial[0];
      y[p] = store<T>(kMax || plane == 0 ? result : result / static_cast<float>(plane));
    }
  }
}

}  // namespace

void launch_max_pool(ElementType type, const void* x, void* y, int64_t* indices, const PoolWindows& w,
                     bool column_major, cudaStream_t stream) {
  const int64_t count = w.planes * w.out_plane();
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    max_pool<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), indices, w,
                                                             column_major, count);
  });
}

void launch_average_pool(ElementType type, const void* x, void* y, const PoolWindows& w, bool include_pad,
                         cudaStream_t stream) {
  const int64_t count = w.planes * w.out_plane();
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    average_pool<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), w,
                                                                 include_pad, count);
  });
}

void launch_max_pool_grad(ElementType type, const void* x, const void* dy, void* dx, const PoolWindows& w,
                          cudaStream_t stream) {
  const int64_t count = w.planes * w.in_plane();
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    max_pool_grad<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(dy),
                                                                  static_cast<T*>(dx), w, count);
  });
}

void launch_average_pool_grad(ElementType type, const void* dy, void* dx, const PoolWindows& w, bool include_pad,
                              cudaStream_t stream) {
  const int64_t count = w.planes * w.in_plane();
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    average_pool_grad<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<T*>(dx),
                                                                      w, include_pad, count);
  });
}

void launch_global_pool(bool max, ElementType type, const void* x, void* y, int64_t planes, int64_t plane,
                        cudaStream_t stream) {
  const int blocks = static_cast<int>(planes < kMaxBlocks ? planes : kMaxBlocks);
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    if (max) {
      global_pool<T, true><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), planes, plane);
    } else {
      global_pool<T, false><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), planes, plane);
    }
  });
}

}  // namespace weir::cuda
