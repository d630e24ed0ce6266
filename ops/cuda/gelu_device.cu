#include "ops/cuda/gelu_device.h"

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;      // sqrt(2 / pi)
constexpr float kInvSqrt2 = 0.70710678118654752f;        // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143268f;      // 1 / sqrt(2 pi)
constexpr float kCubic = 0.044715f;
constexpr float kThreeCubic = 0.134145f;                 // 3 * 0.044715, rounded once as the CPU does

// Each step as the CPU's GeluFunction writes it, so the roundings are alike.
template <GeluForm kForm>
__device__ float gelu(float x) {
  if constexpr (kForm == GeluForm::kTanh) {
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x)));
  } else {
    return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
  }
}

template <GeluForm kForm>
__device__ float gelu_derivative(float x) {
  if constexpr (kForm == GeluForm::kTanh) {
    const float inner = kSqrt2OverPi * (x + kCubic * x * x * x);
    const float t = tanhf(inner);
    const float d_inner = kSqrt2OverPi * (1.0f + kThreeCubic * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * d_inner;
  } else {
    const float cdf = 0.5f * (1.0f + erff(x * kInvSqrt2));
    const float pdf = expf(-0.5f * x * x) * kInvSqrt2Pi;
    return cdf + x * pdf;
  }
}

template <typename T, GeluForm kForm>
__global__ void gelu_elements(const T* x, T* y, int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    y[i] = store<T>(gelu<kForm>(load(x[i])));
  }
}

template <typename T, GeluForm kForm>
__global__ void gelu_grad_elements(const T* dy, const T* x, T* dx, int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    dx[i] = store<T>(load(dy[i]) * gelu_derivative<kForm>(load(x[i])));
  }
}

template <typename T>
void gelu_as(GeluForm form, const void* x, void* y, int64_t count, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  T* out = static_cast<T*>(y);
  if (form == GeluForm::kTanh) {
    gelu_elements<T, GeluForm::kTanh><<<blocks_for(count), kThreads, 0, stream>>>(in, out, count);
  } else {
    gelu_elements<T, GeluForm::kErf><<<blocks_for(count), kThreads, 0, stream>>>(in, out, count);
  }
}

template <typename T>
void gelu_grad_as(GeluForm form, const void* dy, const void* x, void* dx, int64_t count, cudaStream_t stream) {
  const T* g = static_cast<const T*>(dy);
  const T* in = static_cast<const T*>(x);
  T* out = static_cast<T*>(dx);
  if (form == GeluForm::kTanh) {
    gelu_grad_elements<T, GeluForm::kTanh><<<blocks_for(count), kThreads, 0, stream>>>(g, in, out, count);
  } else {
    gelu_grad_elements<T, GeluForm::kErf><<<blocks_for(count), kThreads, 0, stream>>>(g, in, out, count);
  }
}

}  // namespace

void launch_gelu(GeluForm form, ElementType type, const void* x, void* y, int64_t count, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32: return gelu_as<float>(form, x, y, count, stream);
    case ElementType::kFloat16: return gelu_as<__half>(form, x, y, count, stream);
    case ElementType::kBFloat16: return gelu_as<__nv_bfloat16>(form, x, y, count, stream);
  }
}

void launch_gelu_grad(GeluForm form, ElementType type, const void* dy, const void* x, void* dx, int64_t count,
                      cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32: return gelu_grad_as<float>(form, dy, x, dx, count, stream);
    case ElementType::kFloat16: return gelu_grad_as<__half>(form, dy, x, dx, count, stream);
    case ElementType::kBFloat16: return gelu_grad_as<__nv_bfloat16>(form, dy, x, dx, count, stream);
  }
}

}  // namespace weir::cuda
