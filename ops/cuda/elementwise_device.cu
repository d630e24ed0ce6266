#include "ops/cuda/elementwise_device.h"

#include "ops/cuda/device_elements.cuh"

namespace weir::cuda {

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H100 several times over; larger tensors are
// covered by the grid-stride loops.
constexpr int64_t kMaxBlocks = 65536;

int blocks_for(int64_t count) {
  int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// The scalar functions of ops/elementwise/scalar_ops.h, in f32, written the
// same way so the GPU computes what the CPU computes (up to the last-bit
// differences of the device's expf and tanhf).
template <BinaryOp kOp>
__device__ inline float apply(float a, float b, float scale) {
  if constexpr (kOp == BinaryOp::kAdd) return a + b;
  if constexpr (kOp == BinaryOp::kSub) return a - b;
  if constexpr (kOp == BinaryOp::kMul) return a * b;
  if constexpr (kOp == BinaryOp::kDiv) return a / b;
  if constexpr (kOp == BinaryOp::kAddScaled) return a + scale * b;
}

template <UnaryOp kOp>
__device__ inline float apply(float x) {
  if constexpr (kOp == UnaryOp::kNeg) return -x;
  if constexpr (kOp == UnaryOp::kRelu) return x > 0.0f ? x : 0.0f;  // NaN and -0 give +0, as on the CPU
  if constexpr (kOp == UnaryOp::kSigmoid) {
    // Two branches so expf never overflows: for x < 0 use e^x / (1 + e^x).
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
  }
  if constexpr (kOp == UnaryOp::kTanh) return tanhf(x);
  if constexpr (kOp == UnaryOp::kExp) return expf(x);
}

template <typename T, BinaryOp kOp>
__global__ void binary_kernel(const T* a, const T* b, T* out, int64_t count, BroadcastIndexing indexing, float scale) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t rest = i, offset_a = 0, offset_b = 0;
    for (int axis = indexing.rank - 1; axis >= 0; --axis) {
      const int64_t coordinate = rest % indexing.sizes[axis];
      rest /= indexing.sizes[axis];
      offset_a += coordinate * indexing.stride_a[axis];
      offset_b += coordinate * indexing.stride_b[axis];
    }
    out[i] = store<T>(apply<kOp>(load(a[offset_a]), load(b[offset_b]), scale));
  }
}

template <typename T, UnaryOp kOp>
__global__ void unary_kernel(const T* x, T* out, int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    out[i] = store<T>(apply<kOp>(load(x[i])));
  }
}

template <typename T, BinaryOp kOp>
void binary_as(const void* a, const void* b, void* out, int64_t count, const BroadcastIndexing& indexing, float scale,
               cudaStream_t stream) {
  binary_kernel<T, kOp><<<blocks_for(count), kThreads, 0, stream>>>(
      static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), count, indexing, scale);
}

template <BinaryOp kOp>
void binary_op(ElementType type, const void* a, const void* b, void* out, int64_t count,
               const BroadcastIndexing& indexing, float scale, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32: return binary_as<float, kOp>(a, b, out, count, indexing, scale, stream);
    case ElementType::kFloat16: return binary_as<__half, kOp>(a, b, out, count, indexing, scale, stream);
    case ElementType::kBFloat16: return binary_as<__nv_bfloat16, kOp>(a, b, out, count, indexing, scale, stream);
  }
}

template <typename T, UnaryOp kOp>
void unary_as(const void* x, void* out, int64_t count, cudaStream_t stream) {
  unary_kernel<T, kOp><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), count);
}

template <UnaryOp kOp>
void unary_op(ElementType type, const void* x, void* out, int64_t count, cudaStream_t stream) {
  switch (type) {
    case ElementType::kFloat32: return unary_as<float, kOp>(x, out, count, stream);
    case ElementType::kFloat16: return unary_as<__half, kOp>(x, out, count, stream);
    case ElementType::kBFloat16: return unary_as<__nv_bfloat16, kOp>(x, out, count, stream);
  }
}

}  // namespace

void launch_binary(BinaryOp op, ElementType type, const void* a, const void* b, void* out, int64_t count,
                   const BroadcastIndexing& indexing, float scale, cudaStream_t stream) {
  switch (op) {
    case BinaryOp::kAdd: return binary_op<BinaryOp::kAdd>(type, a, b, out, count, indexing, scale, stream);
    case BinaryOp::kSub: return binary_op<BinaryOp::kSub>(type, a, b, out, count, indexing, scale, stream);
    case BinaryOp::kMul: return binary_op<BinaryOp::kMul>(type, a, b, out, count, indexing, scale, stream);
    case BinaryOp::kDiv: return binary_op<BinaryOp::kDiv>(type, a, b, out, count, indexing, scale, stream);
    case BinaryOp::kAddScaled: return binary_op<BinaryOp::kAddScaled>(type, a, b, out, count, indexing, scale, stream);
  }
}

void launch_unary(UnaryOp op, ElementType type, const void* x, void* out, int64_t count, cudaStream_t stream) {
  switch (op) {
    case UnaryOp::kNeg: return unary_op<UnaryOp::kNeg>(type, x, out, count, stream);
    case UnaryOp::kRelu: return unary_op<UnaryOp::kRelu>(type, x, out, count, stream);
    case UnaryOp::kSigmoid: return unary_op<UnaryOp::kSigmoid>(type, x, out, count, stream);
    case UnaryOp::kTanh: return unary_op<UnaryOp::kTanh>(type, x, out, count, stream);
    case UnaryOp::kExp: return unary_op<UnaryOp::kExp>(type, x, out, count, stream);
  }
}

}  // namespace weir::cuda
