// The scalar functions of the elementwise ops in device code, written after
// the CPU's (ops/elementwise/scalar_ops.h, activation_functions.h,
// backward_kernels.cc) operation for operation, so the GPU computes what the
// CPU computes: the same comparisons and selects (NaN, -0 and ties go the
// same way), and the arithmetic of a formula in the same order.
//
// The helpers mul_rn/add_rn/sub_rn (rounded_arithmetic.cuh) round every
// step, so formulas of +, -, *, / match the CPU bit for bit. The
// transcendental functions (expf, tanhf, erff, ...) differ from glibc's by a
// few ulps.
#pragma once

#include <cuda_runtime.h>

#include "ops/cuda/elementwise_device.h"
#include "ops/cuda/rounded_arithmetic.cuh"

namespace weir::cuda {

// The math library in the compute type: FusedElementwise computes f64
// graphs in double, everything else computes in float.
template <typename C> struct Math;
template <> struct Math<float> {
  __device__ static float exp(float x) { return expf(x); }
  __device__ static float log(float x) { return logf(x); }
  __device__ static float sqrt(float x) { return sqrtf(x); }
  __device__ static float tanh(float x) { return tanhf(x); }
  __device__ static float erf(float x) { return erff(x); }
  __device__ static float floor(float x) { return floorf(x); }
  __device__ static float ceil(float x) { return ceilf(x); }
};
template <> struct Math<double> {
  __device__ static double exp(double x) { return ::exp(x); }
  __device__ static double log(double x) { return ::log(x); }
  __device__ static double sqrt(double x) { return ::sqrt(x); }
  __device__ static double tanh(double x) { return ::tanh(x); }
  __device__ static double erf(double x) { return ::erf(x); }
  __device__ static double floor(double x) { return ::floor(x); }
  __device__ static double ceil(double x) { return ::ceil(x); }
};

// --- The ops FusedElementwise chains (scalar_ops.h), in float or double. ---

template <typename C> __device__ inline C neg_of(C x) { return -x; }
template <typename C> __device__ inline C relu_of(C x) { return x > C(0) ? x : C(0); }  // NaN and -0 give +0
template <typename C> __device__ inline C abs_of(C x) { return x < C(0) ? -x : x; }     // -0 stays -0, as on the CPU
template <typename C> __device__ inline C sigmoid_of(C x) {
  // Two branches so exp never overflows: for x < 0 use e^x / (1 + e^x).
  if (x >= C(0)) return C(1) / add_rn(C(1), Math<C>::exp(-x));
  const C e = Math<C>::exp(x);
  return e / add_rn(C(1), e);
}
// NaN propagates from either side; otherwise the larger (smaller), the
// first operand on a tie (so max(-0, +0) is -0, as std::max-like code gives).
template <typename C> __device__ inline C max_of(C a, C b) {
  if (isnan(a) || isnan(b)) return isnan(a) ? a : b;
  return a > b ? a : (b > a ? b : a);
}
template <typename C> __device__ inline C min_of(C a, C b) {
  if (isnan(a) || isnan(b)) return isnan(a) ? a : b;
  return a < b ? a : (b < a ? b : a);
}

// --- Unary ops and activations, in float. ---

// std::min(a, b) and std::max(a, b) as the CPU formulas use them (the order
// of the comparison decides what NaN gives).
__device__ inline float std_min(float a, float b) { return b < a ? b : a; }
__device__ inline float std_max(float a, float b) { return a < b ? b : a; }

// Erf's derivative scale, as the CPU casts it: the double 2 * inv_sqrtpi to
// float (a float literal of the decimal could round differently).
constexpr float kTwoOverSqrtPi = static_cast<float>(2 * 0.56418958354775628695);

template <UnaryOp kOp>
__device__ inline float unary_value(float x, UnaryParams p) {
  const float alpha = p.alpha, beta = p.beta;
  if constexpr (kOp == UnaryOp::kNeg) return -x;
  if constexpr (kOp == UnaryOp::kRelu) return relu_of(x);
  if constexpr (kOp == UnaryOp::kSigmoid) return sigmoid_of(x);
  if constexpr (kOp == UnaryOp::kTanh) return tanhf(x);
  if constexpr (kOp == UnaryOp::kExp) return expf(x);
  if constexpr (kOp == UnaryOp::kLog) return logf(x);
  if constexpr (kOp == UnaryOp::kSqrt) return sqrtf(x);
  if constexpr (kOp == UnaryOp::kAbs) return abs_of(x);
  if constexpr (kOp == UnaryOp::kSign) {
    if (isnan(x)) return x;
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
  }
  if constexpr (kOp == UnaryOp::kLeakyRelu) return x >= 0.0f ? x : mul_rn(alpha, x);
  if constexpr (kOp == UnaryOp::kElu) return x > 0.0f ? x : mul_rn(alpha, expm1f(x));
  if constexpr (kOp == UnaryOp::kSelu) return mul_rn(beta, x > 0.0f ? x : mul_rn(alpha, expm1f(x)));  // beta: gamma
  if constexpr (kOp == UnaryOp::kErf) return erff(x);
  if constexpr (kOp == UnaryOp::kSoftplus) return add_rn(std_max(x, 0.0f), log1pf(expf(-fabsf(x))));
  if constexpr (kOp == UnaryOp::kSoftsign) return x / add_rn(1.0f, fabsf(x));
  if constexpr (kOp == UnaryOp::kHardSigmoid) {
    // NaN first, as the CPU: nvcc folds the clamp into the add's .sat
    // modifier, which turns NaN into 0 (seen on an H100).
    if (isnan(x)) return x;
    return std_max(0.0f, std_min(1.0f, add_rn(mul_rn(alpha, x), beta)));
  }
  if constexpr (kOp == UnaryOp::kHardSwish) return mul_rn(x, std_max(0.0f, std_min(1.0f, add_rn(x / 6.0f, 0.5f))));
  if constexpr (kOp == UnaryOp::kSin) return sinf(x);
  if constexpr (kOp == UnaryOp::kCos) return cosf(x);
  if constexpr (kOp == UnaryOp::kTan) return tanf(x);
  if constexpr (kOp == UnaryOp::kAsin) return asinf(x);
  if constexpr (kOp == UnaryOp::kAcos) return acosf(x);
  if constexpr (kOp == UnaryOp::kAtan) return atanf(x);
  if constexpr (kOp == UnaryOp::kSinh) return sinhf(x);
  if constexpr (kOp == UnaryOp::kCosh) return coshf(x);
  if constexpr (kOp == UnaryOp::kAsinh) return asinhf(x);
  if constexpr (kOp == UnaryOp::kAcosh) return acoshf(x);
  if constexpr (kOp == UnaryOp::kAtanh) return atanhf(x);
  if constexpr (kOp == UnaryOp::kThresholdedRelu) return x > alpha ? x : 0.0f;
  if constexpr (kOp == UnaryOp::kShrink) {  // alpha: bias, beta: lambd
    if (x < -beta) return add_rn(x, alpha);
    return x > beta ? sub_rn(x, alpha) : 0.0f;
  }
  if constexpr (kOp == UnaryOp::kCelu) return x > 0.0f ? x : mul_rn(alpha, expm1f(x / alpha));
  if constexpr (kOp == UnaryOp::kReciprocal) return 1.0f / x;
  if constexpr (kOp == UnaryOp::kFloor) return floorf(x);
  if constexpr (kOp == UnaryOp::kCeil) return ceilf(x);
  if constexpr (kOp == UnaryOp::kRound) return rintf(x);  // halves to even, as std::nearbyint
  if constexpr (kOp == UnaryOp::kClip) return x < alpha ? alpha : (x > beta ? beta : x);  // NaN stays NaN
}

// f'(x) of the activations with a <Op>Grad op (activation_functions.h).
template <UnaryOp kOp>
__device__ inline float unary_derivative(float x, UnaryParams p) {
  const float alpha = p.alpha, beta = p.beta;
  if constexpr (kOp == UnaryOp::kLeakyRelu) return x >= 0.0f ? 1.0f : alpha;
  if constexpr (kOp == UnaryOp::kElu) return x > 0.0f ? 1.0f : mul_rn(alpha, expf(x));
  if constexpr (kOp == UnaryOp::kSelu) return mul_rn(beta, x > 0.0f ? 1.0f : mul_rn(alpha, expf(x)));
  if constexpr (kOp == UnaryOp::kErf) return mul_rn(kTwoOverSqrtPi, expf(mul_rn(-x, x)));
  if constexpr (kOp == UnaryOp::kSoftplus) return sigmoid_of(x);
  if constexpr (kOp == UnaryOp::kSoftsign) {
    const float d = add_rn(1.0f, fabsf(x));
    return 1.0f / mul_rn(d, d);
  }
  if constexpr (kOp == UnaryOp::kHardSigmoid) {
    const float t = add_rn(mul_rn(alpha, x), beta);
    return t > 0.0f && t < 1.0f ? alpha : 0.0f;
  }
  if constexpr (kOp == UnaryOp::kHardSwish) {
    if (x < -3.0f) return 0.0f;
    if (x > 3.0f) return 1.0f;
    return add_rn(x / 3.0f, 0.5f);
  }
  if constexpr (kOp == UnaryOp::kSin) return cosf(x);
  if constexpr (kOp == UnaryOp::kCos) return -sinf(x);
  if constexpr (kOp == UnaryOp::kTan) return 1.0f / mul_rn(cosf(x), cosf(x));
  if constexpr (kOp == UnaryOp::kAsin) return 1.0f / sqrtf(sub_rn(1.0f, mul_rn(x, x)));
  if constexpr (kOp == UnaryOp::kAcos) return -1.0f / sqrtf(sub_rn(1.0f, mul_rn(x, x)));
  if constexpr (kOp == UnaryOp::kAtan) return 1.0f / add_rn(1.0f, mul_rn(x, x));
  if constexpr (kOp == UnaryOp::kSinh) return coshf(x);
  if constexpr (kOp == UnaryOp::kCosh) return sinhf(x);
  if constexpr (kOp == UnaryOp::kAsinh) return 1.0f / sqrtf(add_rn(mul_rn(x, x), 1.0f));
  if constexpr (kOp == UnaryOp::kAcosh) return 1.0f / sqrtf(sub_rn(mul_rn(x, x), 1.0f));
  if constexpr (kOp == UnaryOp::kAtanh) return 1.0f / sub_rn(1.0f, mul_rn(x, x));
  if constexpr (kOp == UnaryOp::kThresholdedRelu) return x > alpha ? 1.0f : 0.0f;
  if constexpr (kOp == UnaryOp::kShrink) return (x < -beta || x > beta) ? 1.0f : 0.0f;
  if constexpr (kOp == UnaryOp::kCelu) return x > 0.0f ? 1.0f : expf(x / alpha);
  if constexpr (kOp == UnaryOp::kReciprocal) return -1.0f / mul_rn(x, x);
  return 0.0f;  // the rest have no derivative kernel
}

// --- Binary ops, in float. ---

template <BinaryOp kOp>
__device__ inline float binary_value(float a, float b, float scale) {
  if constexpr (kOp == BinaryOp::kAdd) return add_rn(a, b);
  if constexpr (kOp == BinaryOp::kSub) return sub_rn(a, b);
  if constexpr (kOp == BinaryOp::kMul) return mul_rn(a, b);
  if constexpr (kOp == BinaryOp::kDiv) return a / b;
  if constexpr (kOp == BinaryOp::kAddScaled) return add_rn(a, mul_rn(scale, b));
  if constexpr (kOp == BinaryOp::kPow) return powf(a, b);
  if constexpr (kOp == BinaryOp::kFmod) return fmodf(a, b);
  if constexpr (kOp == BinaryOp::kMax) return max_of(a, b);
  if constexpr (kOp == BinaryOp::kMin) return min_of(a, b);
  if constexpr (kOp == BinaryOp::kPRelu) return a < 0.0f ? mul_rn(b, a) : a;
  // The backward ops: a is dY, b the saved forward input or output.
  if constexpr (kOp == BinaryOp::kReluGrad) return b > 0.0f ? a : 0.0f;
  if constexpr (kOp == BinaryOp::kSigmoidGrad) return mul_rn(mul_rn(a, b), sub_rn(1.0f, b));
  if constexpr (kOp == BinaryOp::kTanhGrad) return mul_rn(a, sub_rn(1.0f, mul_rn(b, b)));
}

}  // namespace weir::cuda
