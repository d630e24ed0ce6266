#include "ops/cuda/conv_device.h"

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

namespace {

template <typename S, typename D>
__global__ void shifted_copy(const S* src, D* dst, conv::Shift shift, int64_t count) {
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const int64_t from = conv::shifted_source(shift, i);
    dst[i] = store<D>(from < 0 ? 0.0f : load(src[from]));
  }
}

template <typename T>
__global__ void channels_first(const T* src, float* dst, int64_t channels, int64_t plane, int64_t count) {
  // i indexes dst [N, C, plane]: neighbouring threads write neighbouring elements.
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    dst[i] = load(src[conv::channels_last_source(i, channels, plane)]);
  }
}

template <typename T>
__global__ void channels_last(const T* src, T* dst, int64_t channels, int64_t plane, int64_t count) {
  // i indexes dst [N, plane, C]: neighbouring threads write neighbouring elements.
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    dst[i] = src[conv::channels_first_source(i, channels, plane)];
  }
}

template <typename S, typename T>
__global__ void conv_epilogue(const S* sums, bool sums_in_y_layout, const T* bias, const T* z, T* y, int64_t channels,
                              int64_t plane, bool channels_last, conv::Activation activation, int64_t count) {
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    int64_t k = 0;
    const int64_t source = conv::epilogue_source(i, channels, plane, channels_last, k);
    float value = load(sums[sums_in_y_layout ? i : source]);
    if (bias != nullptr) value += load(bias[k]);
    if (z != nullptr) value += load(z[i]);
    y[i] = store<T>(activation.apply(value));
  }
}

// One block per channel: every thread sums a strided share of the
// channel's batch * plane elements, then the block adds its threads' sums
// in a fixed order (deterministic, no atomics).
template <typename T, typename D>
__global__ void conv_bias_grad(const T* dy, D* db, int64_t batch, int64_t channels, int64_t plane) {
  __shared__ float partial[kThreads];
  for (int64_t k = blockIdx.x; k < channels; k += gridDim.x) {
    float sum = 0.0f;
    const int64_t count = batch * plane;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
      const int64_t n = e / plane, s = e % plane;
      sum += load(dy[(n * channels + k) * plane + s]);
    }
    __syncthreads();  // the previous channel's readers are done with `partial`
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) db[k] = store<D>(partial[0]);
  }
}

}  // namespace

void launch_shifted_copy(ElementType src_type, const void* src, const Spatial3& src_sizes, ElementType dst_type,
                         void* dst, const Spatial3& dst_sizes, const int64_t offset[3], int64_t planes,
                         cudaStream_t stream) {
  conv::Shift shift;
  for (int a = 0; a < 3; ++a) {
    shift.src[a] = src_sizes.size[a];
    shift.dst[a] = dst_sizes.size[a];
    shift.offset[a] = offset[a];
  }
  const int64_t count = planes * dst_sizes.volume();
  with_element_type(src_type, [&](auto s) {
    using S = decltype(s);
    with_element_type(dst_type, [&](auto d) {
      using D = decltype(d);
      shifted_copy<S, D><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst),
                                                                      shift, count);
    });
  });
}

void launch_channels_first_f32(ElementType type, const void* src, float* dst, int64_t batch, int64_t channels,
                               int64_t plane, cudaStream_t stream) {
  const int64_t count = batch * channels * plane;
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    channels_first<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(src), dst, channels, plane, count);
  });
}

void launch_channels_last(ElementType type, const void* src, void* dst, int64_t batch, int64_t channels, int64_t plane,
                          cudaStream_t stream) {
  const int64_t count = batch * channels * plane;
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    channels_last<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst),
                                                                 channels, plane, count);
  });
}

void launch_conv_epilogue(ElementType type, ElementType sums_type, const void* sums, bool sums_in_y_layout,
                          const void* bias, const void* z, void* y, int64_t batch, int64_t channels, int64_t plane,
                          bool channels_last, ConvActivation activation, float alpha, float beta, cudaStream_t stream) {
  const int64_t count = batch * channels * plane;
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    with_element_type(sums_type, [&](auto s) {
      using S = decltype(s);
      conv_epilogue<S, T><<<blocks_for(count), kThreads, 0, stream>>>(
          static_cast<const S*>(sums), sums_in_y_layout, static_cast<const T*>(bias), static_cast<const T*>(z),
          static_cast<T*>(y), channels, plane, channels_last, conv::Activation{activation, alpha, beta}, count);
    });
  });
}

void launch_conv_bias_grad(ElementType type, const void* dy, ElementType db_type, void* db, int64_t batch,
                           int64_t channels, int64_t plane, cudaStream_t stream) {
  const int blocks = static_cast<int>(channels < kMaxBlocks ? channels : kMaxBlocks);
  with_element_type(type, [&](auto t) {
    using T = decltype(t);
    with_element_type(db_type, [&](auto d) {
      using D = decltype(d);
      conv_bias_grad<T, D><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<D*>(db), batch,
                                                             channels, plane);
    });
  });
}

}  // namespace weir::cuda
