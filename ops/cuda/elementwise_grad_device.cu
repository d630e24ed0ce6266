#include "ops/cuda/elementwise_grad_device.h"

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/elementwise_dispatch.cuh"
#include "ops/cuda/scalar_functions.cuh"

namespace weir::cuda {

namespace {

template <typename T, UnaryOp kOp>
__global__ void activation_grad_kernel(const T* dy, const T* x, T* dx, int64_t count, UnaryParams params) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    dx[i] = store<T>(mul_rn(load(dy[i]), unary_derivative<kOp>(load(x[i]), params)));
  }
}

template <typename T>
__global__ void clip_grad_kernel(const T* dy, const T* x, T* dx, int64_t count, UnaryParams bounds, const T* low,
                                 const T* high) {
  if (low != nullptr) bounds.alpha = load(*low);
  if (high != nullptr) bounds.beta = load(*high);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    const float v = load(x[i]);
    // dY itself, not rounded through f32 (the CPU copies it too); NaN X gives 0.
    dx[i] = v >= bounds.alpha && v <= bounds.beta ? dy[i] : store<T>(0.0f);
  }
}

template <typename T>
__global__ void prelu_grad_kernel(const T* dy, const T* x, const T* slope, T* dx, T* dslope, int64_t count,
                                  const __grid_constant__ BroadcastIndexing indexing) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t offset_x, offset;  // x is contiguous: offset_x == i
    broadcast_offsets(indexing, i, offset_x, offset);
    const float g = load(dy[i]), v = load(x[i]);
    const bool negative = v < 0.0f;
    dx[i] = negative ? store<T>(mul_rn(g, load(slope[offset]))) : dy[i];
    dslope[i] = store<T>(negative ? mul_rn(g, v) : 0.0f);
  }
}

}  // namespace

void launch_activation_grad(UnaryOp op, ElementType type, const void* dy, const void* x, void* dx, int64_t count,
                            UnaryParams params, cudaStream_t stream) {
  dispatch_type(type, [&]<typename T>() {
    dispatch_op<UnaryOp, UnaryOp::kLeakyRelu, UnaryOp::kElu, UnaryOp::kSelu,
                UnaryOp::kErf, UnaryOp::kSoftplus, UnaryOp::kSoftsign, UnaryOp::kHardSigmoid, UnaryOp::kHardSwish,
                UnaryOp::kSin, UnaryOp::kCos, UnaryOp::kTan, UnaryOp::kAsin, UnaryOp::kAcos, UnaryOp::kAtan,
                UnaryOp::kSinh, UnaryOp::kCosh, UnaryOp::kAsinh, UnaryOp::kAcosh, UnaryOp::kAtanh,
                UnaryOp::kThresholdedRelu, UnaryOp::kShrink, UnaryOp::kCelu, UnaryOp::kReciprocal>(
        op, [&]<UnaryOp kOp>() {
          activation_grad_kernel<T, kOp><<<blocks_for(count), kThreads, 0, stream>>>(
              static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dx), count, params);
        });
  });
}

void launch_clip_grad(ElementType type, const void* dy, const void* x, void* dx, int64_t count, UnaryParams bounds,
                      const void* low, const void* high, cudaStream_t stream) {
  dispatch_type(type, [&]<typename T>() {
    clip_grad_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dx), count, bounds,
        static_cast<const T*>(low), static_cast<const T*>(high));
  });
}

void launch_prelu_grad(ElementType type, const void* dy, const void* x, const void* slope, void* dx, void* dslope,
                       int64_t count, const BroadcastIndexing& indexing, cudaStream_t stream) {
  dispatch_type(type, [&]<typename T>() {
    prelu_grad_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(slope), static_cast<T*>(dx),
        static_cast<T*>(dslope), count, indexing);
  });
}

}  // namespace weir::cuda
