#include "ops/cuda/dropout_device.h"

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

namespace {

// core/splitmix.h's splitmix64_mix, for the device.
__device__ inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

template <typename T>
__global__ void dropout_elements(const T* x, T* y, bool* mask, int64_t count, uint64_t stream_key, double ratio,
                                 float scale) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    // The 53-bit integer and the power-of-two scaling are exact in f64, as on the CPU.
    const double u = static_cast<double>(splitmix64_mix(stream_key + static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53;
    const bool keep = u >= ratio;
    if (mask != nullptr) mask[i] = keep;
    y[i] = keep ? store<T>(load(x[i]) * scale) : store<T>(0.0f);
  }
}

template <typename T>
__global__ void dropout_grad_elements(const T* dy, const bool* mask, T* dx, int64_t count, float scale) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    dx[i] = mask[i] ? store<T>(load(dy[i]) * scale) : store<T>(0.0f);
  }
}

template <typename T>
void dropout_as(const void* x, void* y, bool* mask, int64_t count, uint64_t stream_key, double ratio, float scale,
                cudaStream_t stream) {
  dropout_elements<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), mask,
                                                                  count, stream_key, ratio, scale);
}

template <typename T>
void dropout_grad_as(const void* dy, const bool* mask, void* dx, int64_t count, float scale, cudaStream_t stream) {
  dropout_grad_elements<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(dy), mask,
                                                                       static_cast<T*>(dx), count, scale);
}

}  // namespace

void launch_dropout(ElementType type, const void* x, void* y, bool* mask, int64_t count, uint64_t stream_key,
                    double ratio, float scale, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32: return dropout_as<float>(x, y, mask, count, stream_key, ratio, scale, stream);
    case ElementType::kFloat16: return dropout_as<__half>(x, y, mask, count, stream_key, ratio, scale, stream);
    case ElementType::kBFloat16: return dropout_as<__nv_bfloat16>(x, y, mask, count, stream_key, ratio, scale, stream);
  }
}

void launch_dropout_grad(ElementType type, const void* dy, const bool* mask, void* dx, int64_t count, float scale,
                         cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32: return dropout_grad_as<float>(dy, mask, dx, count, scale, stream);
    case ElementType::kFloat16: return dropout_grad_as<__half>(dy, mask, dx, count, scale, stream);
    case ElementType::kBFloat16: return dropout_grad_as<__nv_bfloat16>(dy, mask, dx, count, scale, stream);
  }
}

}  // namespace weir::cuda
