// The device side of the CUDA elementwise kernels (elementwise_device.cu):
// launchers with plain arguments, so the OpKernels around them
// (elementwise_kernels.cc) are ordinary C++ and this header needs no Weir
// types. f16 and bf16 compute in f32 and round to nearest even on store,
// as the CPU kernels do.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace weir::cuda {

enum class ElementType { kFloat32, kFloat16, kBFloat16 };

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kAddScaled,  // a + scale * b (Gemm's beta * C)
};

enum class UnaryOp { kNeg, kRelu, kSigmoid, kTanh, kExp };

// Where output element i of a broadcast reads its operands: i decomposed
// over `sizes` (row-major), dotted with each operand's strides (0 along
// broadcast axes). Adjacent axes are collapsed where both operands allow
// (broadcast_indexing.h), so a same-shape pair is one axis of stride 1.
struct BroadcastIndexing {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t stride_a[kMaxRank] = {};
  int64_t stride_b[kMaxRank] = {};
};

// out[i] = op(a[...], b[...]) for i < count (count > 0).
void launch_binary(BinaryOp op, ElementType type, const void* a, const void* b, void* out, int64_t count,
                   const BroadcastIndexing& indexing, float scale, cudaStream_t stream);
// out[i] = op(x[i]) for i < count (count > 0).
void launch_unary(UnaryOp op, ElementType type, const void* x, void* out, int64_t count, cudaStream_t stream);

}  // namespace weir::cuda
