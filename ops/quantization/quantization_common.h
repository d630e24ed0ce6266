// What the quantization kernels share: rounding and saturation to 8-bit
// integers, reading scales and zero points, and the int32-accumulating
// integer matrix product under MatMulInteger, ConvInteger and their QLinear
// forms.
//
//   uint8_t q = saturate_round<uint8_t>(x / scale, zero_point);   // ties to even, then clamped to [0, 255]
//   int8_t r = requantize<int8_t>(accumulator, a_scale * b_scale / y_scale, y_zero_point);
//   int_gemm(m, n, k, {{a16, b16, c32}});                          // c = a b, int32 wrapping sums
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ops/kernel.h"

namespace weir {

// The quantized types: i8 and u8.
inline bool is_quantized_dtype(DType dtype) { return dtype == DType::kInt8 || dtype == DType::kUInt8; }
// The same as a type constraint and kernel registration list.
inline const std::vector<DType> kQuantizedDTypes = {DType::kInt8, DType::kUInt8};

// round(value) + zero_point, halves to even (std::nearbyint in the default
// rounding mode), saturated to Q's range; NaN gives the zero point. F is
// float, or double for what float cannot hold exactly (i32 over a scale).
template <typename Q, typename F>
inline Q saturate_round(F value, int32_t zero_point) {
  constexpr F kLow = static_cast<F>(std::numeric_limits<Q>::min());
  constexpr F kHigh = static_cast<F>(std::numeric_limits<Q>::max());
  if (std::isnan(value)) value = 0;
  F q = std::nearbyint(value) + static_cast<F>(zero_point);
  return static_cast<Q>(std::clamp(q, kLow, kHigh));
}

// The requantization of an int32 accumulator: saturate_round(float(acc) * multiplier, zero_point).
template <typename Q>
inline Q requantize(int32_t accumulator, float multiplier, int32_t zero_point) {
  return saturate_round<Q>(static_cast<float>(accumulator) * multiplier, zero_point);
}

// Whether the quantized conv and matmul kernels must run their reference
// loops (the int32 code below) instead of oneDNN: WEIR_QUANTIZED_REFERENCE=1
// (read once), or a ScopedQuantizedReference alive in a test that compares
// the two paths. The reference is also what runs wherever oneDNN cannot
// (u8 or nonzero-zero-point weights, per-row scales, 3-D problems it refuses).
bool quantized_reference_forced();

// Forces the reference loops while it lives, for kernels on every thread
// (tests and benchmarks only).
class ScopedQuantizedReference {
 public:
  ScopedQuantizedReference();
  ~ScopedQuantizedReference();
  ScopedQuantizedReference(const ScopedQuantizedReference&) = delete;
  ScopedQuantizedReference& operator=(const ScopedQuantizedReference&) = delete;
};

// The values of a scale input, which must be f32 (ONNX asks nothing more:
// a zero scale quantizes to the saturated ends, as the division says).
std::vector<float> scale_values(const KernelContext& ctx, const Tensor& scale, const std::string& name);

// The values of a zero point input of `expected` dtype (that of the tensor
// it belongs to), widened to int32; fails naming `name` otherwise.
std::vector<int32_t> zero_point_values(const KernelContext& ctx, const Tensor& zero_point, DType expected,
                                       const std::string& name);

// `values` (i8 or u8) minus `zero_points[index(i)]`, as int16 (the
// differences lie in [-255, 255]).
template <typename Q, typename IndexFn>
inline void subtract_zero_points(const Q* values, int64_t count, const std::vector<int32_t>& zero_points,
                                 IndexFn&& index, int16_t* out) {
  for (int64_t i = 0; i < count; ++i) {
    out[i] = static_cast<int16_t>(static_cast<int32_t>(values[i]) - zero_points[static_cast<size_t>(index(i))]);
  }
}

// One product of a batch: c[m, n] = a[m, k] b[k, n], row-major.
struct IntGemmItem {
  const int16_t* a;
  const int16_t* b;
  int32_t* c;
};

// Every item's product, summing in int32 that wraps on overflow (ONNX lets
// only the accumulation overflow, and only in 32 bits), on the intra-op
// threads. k may be 0 (then c is zero).
void int_gemm(int64_t m, int64_t n, int64_t k, const std::vector<IntGemmItem>& items);

}  // namespace weir
