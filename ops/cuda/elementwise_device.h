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
  kPow,
  kFmod,  // Mod with fmod=1: the remainder takes the dividend's sign
  kMax,   // NaN from either side propagates
  kMin,
  kPRelu,  // a where a >= 0, else b * a (b: the slope)
  // Backward ops, a = dY: dY where X > 0; dY * Y * (1 - Y); dY * (1 - Y^2).
  kReluGrad,
  kSigmoidGrad,
  kTanhGrad,
};

// The unary ops and activations. Those with attributes read them from
// UnaryParams: LeakyRelu, Elu, Celu, ThresholdedRelu alpha; Selu alpha and
// gamma (beta); HardSigmoid alpha and beta; Shrink bias (alpha) and lambd
// (beta); Clip min (alpha) and max (beta).
enum class UnaryOp {
  kNeg, kRelu, kSigmoid, kTanh, kExp, kLog, kSqrt, kAbs, kSign,
  kLeakyRelu, kElu, kSelu, kErf, kSoftplus, kSoftsign, kHardSigmoid, kHardSwish,
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh,
  kThresholdedRelu, kShrink, kCelu, kReciprocal, kFloor, kCeil, kRound, kClip,
};

struct UnaryParams {
  float alpha = 0.0f;
  float beta = 0.0f;
};

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

// The same for up to kMaxOperands operands (Sum, Mean, Max, Min, Where).
struct MultiBroadcastIndexing {
  static constexpr int kMaxRank = 8;
  static constexpr int kMaxOperands = 16;
  int rank = 0;
  int operands = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[kMaxOperands][kMaxRank] = {};
};

// out[i] = op(a[...], b[...]) for i < count (count > 0).
void launch_binary(BinaryOp op, ElementType type, const void* a, const void* b, void* out, int64_t count,
                   const BroadcastIndexing& indexing, float scale, cudaStream_t stream);
// out[i] = op(x[i]) for i < count (count > 0).
void launch_unary(UnaryOp op, ElementType type, const void* x, void* out, int64_t count, cudaStream_t stream,
                  UnaryParams params = {});
// Clip with bounds that live in device memory: params.alpha (.beta) is
// replaced by *low (*high) where that pointer is not null.
void launch_clip(ElementType type, const void* x, void* out, int64_t count, UnaryParams bounds, const void* low,
                 const void* high, cudaStream_t stream);

// Sum (kAdd), Max, Min over inputs[0..indexing.operands), broadcast into
// out, folded left to right and rounded to the element type after every
// step (as the CPU folds into its output); then divided by `divisor` when
// it is not 0 (Mean). out may be inputs[0] when that has out's shape.
void launch_variadic(BinaryOp op, ElementType type, const void* const* inputs, void* out, int64_t count,
                     const MultiBroadcastIndexing& indexing, float divisor, cudaStream_t stream);

enum class FloatClass { kNaN, kInf };
// out[i] (bool) = isnan(x[i]), or isinf(x[i]) with the signs asked for.
void launch_float_class(FloatClass what, bool negative, bool positive, ElementType type, const void* x, bool* out,
                        int64_t count, cudaStream_t stream);

}  // namespace weir::cuda
