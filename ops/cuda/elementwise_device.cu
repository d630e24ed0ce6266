#include "ops/cuda/elementwise_device.h"

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/elementwise_dispatch.cuh"
#include "ops/cuda/scalar_functions.cuh"

namespace weir::cuda {

namespace {

// Structs of the launch (indexing, inputs) are __grid_constant__: read in
// place from the kernel's parameters with the loop's indices, never copied
// to each thread's local memory.
template <typename T, BinaryOp kOp>
__global__ void binary_kernel(const T* a, const T* b, T* out, int64_t count,
                              const __grid_constant__ BroadcastIndexing indexing, float scale) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t offset_a, offset_b;
    broadcast_offsets(indexing, i, offset_a, offset_b);
    out[i] = store<T>(binary_value<kOp>(load(a[offset_a]), load(b[offset_b]), scale));
  }
}

template <typename T, UnaryOp kOp>
__global__ void unary_kernel(const T* x, T* out, int64_t count, UnaryParams params) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    out[i] = store<T>(unary_value<kOp>(load(x[i]), params));
  }
}

// Clip's bounds read on the device, where the graph computed them: no copy
// to the host, no wait.
template <typename T>
__global__ void clip_kernel(const T* x, T* out, int64_t count, UnaryParams bounds, const T* low, const T* high) {
  if (low != nullptr) bounds.alpha = load(*low);
  if (high != nullptr) bounds.beta = load(*high);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    out[i] = store<T>(unary_value<UnaryOp::kClip>(load(x[i]), bounds));
  }
}

// The inputs of a variadic op, by value in the kernel's parameters.
struct VariadicInputs {
  const void* data[MultiBroadcastIndexing::kMaxOperands];
};

template <typename T, BinaryOp kOp>
__global__ void variadic_kernel(const __grid_constant__ VariadicInputs inputs, T* out, int64_t count,
                                const __grid_constant__ MultiBroadcastIndexing indexing, float divisor) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t coordinates[MultiBroadcastIndexing::kMaxRank];
    broadcast_coordinates(indexing, i, coordinates);
    float acc = 0.0f;
    for (int k = 0; k < indexing.operands; ++k) {
      const float value = load(static_cast<const T*>(inputs.data[k])[operand_offset(indexing, k, coordinates)]);
      // The CPU folds into its output, so every partial result is rounded
      // to T: round here too (a no-op for f32).
      acc = k == 0 ? value : load(store<T>(binary_value<kOp>(acc, value, 1.0f)));
    }
    if (divisor != 0.0f) acc = acc / divisor;
    out[i] = store<T>(acc);
  }
}

template <typename T>
__global__ void float_class_kernel(FloatClass what, bool negative, bool positive, const T* x, bool* out, int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    const float v = load(x[i]);
    out[i] = what == FloatClass::kNaN ? isnan(v) : (isinf(v) && ((v > 0.0f && positive) || (v < 0.0f && negative)));
  }
}

}  // namespace

void launch_binary(BinaryOp op, ElementType type, const void* a, const void* b, void* out, int64_t count,
                   const BroadcastIndexing& indexing, float scale, cudaStream_t stream) {
  dispatch_type(type, [&]<typename T>() {
    dispatch_op<BinaryOp, BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kAddScaled,
                BinaryOp::kPow, BinaryOp::kFmod, BinaryOp::kMax, BinaryOp::kMin, BinaryOp::kPRelu, BinaryOp::kReluGrad,
                BinaryOp::kSigmoidGrad, BinaryOp::kTanhGrad>(op, [&]<BinaryOp kOp>() {
      binary_kernel<T, kOp><<<blocks_for(count), kThreads, 0, stream>>>(
          static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), count, indexing, scale);
    });
  });
}

void launch_unary(UnaryOp op, ElementType type, const void* x, void* out, int64_t count, cudaStream_t stream,
                  UnaryParams params) {
  dispatch_type(type, [&]<typename T>() {
    dispatch_op<UnaryOp, UnaryOp::kNeg, UnaryOp::kRelu, UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kExp,
                UnaryOp::kLog, UnaryOp::kSqrt, UnaryOp::kAbs, UnaryOp::kSign, UnaryOp::kLeakyRelu, UnaryOp::kElu,
                UnaryOp::kSelu, UnaryOp::kErf, UnaryOp::kSoftplus,
                UnaryOp::kSoftsign, UnaryOp::kHardSigmoid, UnaryOp::kHardSwish, UnaryOp::kSin, UnaryOp::kCos,
                UnaryOp::kTan, UnaryOp::kAsin, UnaryOp::kAcos, UnaryOp::kAtan, UnaryOp::kSinh, UnaryOp::kCosh,
                UnaryOp::kAsinh, UnaryOp::kAcosh, UnaryOp::kAtanh, UnaryOp::kThresholdedRelu, UnaryOp::kShrink,
                UnaryOp::kCelu, UnaryOp::kReciprocal, UnaryOp::kFloor, UnaryOp::kCeil, UnaryOp::kRound,
                UnaryOp::kClip>(op, [&]<UnaryOp kOp>() {
      unary_kernel<T, kOp><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out),
                                                                        count, params);
    });
  });
}

void launch_clip(ElementType type, const void* x, void* out, int64_t count, UnaryParams bounds, const void* low,
                 const void* high, cudaStream_t stream) {
  dispatch_type(type, [&]<typename T>() {
    clip_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), count,
                                                                bounds, static_cast<const T*>(low),
                                                                static_cast<const T*>(high));
  });
}

void launch_variadic(BinaryOp op, ElementType type, const void* const* inputs, void* out, int64_t count,
                     const MultiBroadcastIndexing& indexing, float divisor, cudaStream_t stream) {
  VariadicInputs pointers = {};
  for (int k = 0; k < indexing.operands; ++k) pointers.data[k] = inputs[k];
  dispatch_type(type, [&]<typename T>() {
    dispatch_op<BinaryOp, BinaryOp::kAdd, BinaryOp::kMax, BinaryOp::kMin>(op, [&]<BinaryOp kOp>() {
      variadic_kernel<T, kOp><<<blocks_for(count), kThreads, 0, stream>>>(pointers, static_cast<T*>(out), count,
                                                                           indexing, divisor);
    });
  });
}

void launch_float_class(FloatClass what, bool negative, bool positive, ElementType type, const void* x, bool* out,
                        int64_t count, cudaStream_t stream) {
  dispatch_type(type, [&]<typename T>() {
    float_class_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(what, negative, positive,
                                                                       static_cast<const T*>(x), out, count);
  });
}

}  // namespace weir::cuda
