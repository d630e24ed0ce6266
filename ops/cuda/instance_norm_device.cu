#include "ops/cuda/instance_norm_device.h"

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/row_statistics.cuh"

namespace weir::cuda {

namespace {

constexpr int64_t kMaxBlocks = 65536;

template <typename T>
__global__ void instance_norm_planes(const T* x, const T* scale, const T* bias, T* y, int64_t planes, int64_t channels,
                                     int64_t len, float epsilon) {
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const T* in = x + plane * len;
    T* out = y + plane * len;
    const float2 s = row_statistics(in, len, epsilon);
    const int64_t c = plane % channels;
    // Rounded as the CPU's (no fused multiply-adds): for a plane of one
    // element (rstd 1 / sqrt(epsilon)) x * a and mean * a cancel.
    const float a = __fmul_rn(s.y, load(scale[c]));
    const float b = __fsub_rn(bias != nullptr ? load(bias[c]) : 0.0f, __fmul_rn(s.x, a));
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) out[j] = store<T>(__fadd_rn(__fmul_rn(load(in[j]), a), b));
  }
}

// dx of every plane, and the plane's sums of dy * xhat and of dy into
// partial[plane] for the per-channel totals.
template <typename T>
__global__ void instance_norm_grad_planes(const T* dy, const T* x, const T* scale, T* dx, float2* partial,
                                          int64_t planes, int64_t channels, int64_t len, float epsilon) {
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const T* in = x + plane * len;
    const T* grad = dy + plane * len;
    T* out = dx + plane * len;
    const float2 s = row_statistics(in, len, epsilon);
    const float gamma = load(scale[plane % channels]);
    float sum_dy = 0.0f, sum_dy_xhat = 0.0f;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const float g = load(grad[j]);
      sum_dy += g;
      sum_dy_xhat += g * ((load(in[j]) - s.x) * s.y);
    }
    sum_dy = block_reduce<SumOp>(sum_dy);
    sum_dy_xhat = block_reduce<SumOp>(sum_dy_xhat);
    // mean(dxhat) and mean(dxhat * xhat): gamma is the plane's one scale.
    const float mean_dxhat = gamma * sum_dy / static_cast<float>(len);
    const float mean_dxhat_xhat = gamma * sum_dy_xhat / static_cast<float>(len);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const float xhat = (load(in[j]) - s.x) * s.y;
      const float dxhat = load(grad[j]) * gamma;
      out[j] = store<T>(s.y * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
    }
    if (threadIdx.x == 0) partial[plane] = make_float2(sum_dy_xhat, sum_dy);
  }
}

// dscale[c] and dbias[c]: the planes of channel c (c, c + channels, ...) in order.
template <typename T>
__global__ void instance_norm_grad_channels(const float2* partial, T* dscale, T* dbias, int64_t planes,
                                            int64_t channels) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels; c += step) {
    float sum_scale = 0.0f, sum_bias = 0.0f;
    for (int64_t plane = c; plane < planes; plane += channels) {
      sum_scale += partial[plane].x;
      sum_bias += partial[plane].y;
    }
    dscale[c] = store<T>(sum_scale);
    dbias[c] = store<T>(sum_bias);
  }
}

int plane_blocks(int64_t planes) { return static_cast<int>(planes < kMaxBlocks ? planes : kMaxBlocks); }

template <typename T>
void instance_norm_as(const void* x, const void* scale, const void* bias, void* y, int64_t planes, int64_t channels,
                      int64_t len, float epsilon, cudaStream_t stream) {
  instance_norm_planes<T><<<plane_blocks(planes), threads_for_line(len, 512), 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(y), planes,
      channels, len, epsilon);
}

template <typename T>
void instance_norm_grad_as(const void* dy, const void* x, const void* scale, void* dx, void* dscale, void* dbias,
                           int64_t planes, int64_t channels, int64_t len, float epsilon, void* workspace,
                           cudaStream_t stream) {
  float2* partial = static_cast<float2*>(workspace);
  // Planes of no elements contribute nothing: the channel sums see none.
  const int64_t summed = len > 0 ? planes : 0;
  if (summed > 0) {
    instance_norm_grad_planes<T><<<plane_blocks(planes), threads_for_line(len, 512), 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<T*>(dx), partial,
        planes, channels, len, epsilon);
  }
  constexpr int kThreads = 256;
  const int64_t wanted = (channels + kThreads - 1) / kThreads;
  instance_norm_grad_channels<T><<<static_cast<int>(wanted < 4096 ? wanted : 4096), kThreads, 0, stream>>>(
      partial, static_cast<T*>(dscale), static_cast<T*>(dbias), summed, channels);
}

}  // namespace

void launch_instance_norm(ElementType type, const void* x, const void* scale, const void* bias, void* y,
                          int64_t planes, int64_t channels, int64_t len, float epsilon, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32:
      return instance_norm_as<float>(x, scale, bias, y, planes, channels, len, epsilon, stream);
    case ElementType::kFloat16:
      return instance_norm_as<__half>(x, scale, bias, y, planes, channels, len, epsilon, stream);
    case ElementType::kBFloat16:
      return instance_norm_as<__nv_bfloat16>(x, scale, bias, y, planes, channels, len, epsilon, stream);
  }
}

size_t instance_norm_grad_workspace_bytes(int64_t planes) { return static_cast<size_t>(planes) * sizeof(float2); }

void launch_instance_norm_grad(ElementType type, const void* dy, const void* x, const void* scale, void* dx,
                               void* dscale, void* dbias, int64_t planes, int64_t channels, int64_t len, float epsilon,
                               void* workspace, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32:
      return instance_norm_grad_as<float>(dy, x, scale, dx, dscale, dbias, planes, channels, len, epsilon, workspace,
                                          stream);
    case ElementType::kFloat16:
      return instance_norm_grad_as<__half>(dy, x, scale, dx, dscale, dbias, planes, channels, len, epsilon, workspace,
                                           stream);
    case ElementType::kBFloat16:
      return instance_norm_grad_as<__nv_bfloat16>(dy, x, scale, dx, dscale, dbias, planes, channels, len, epsilon,
                                                   workspace, stream);
  }
}

}  // namespace weir::cuda
