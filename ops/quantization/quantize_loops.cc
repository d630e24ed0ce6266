#include "ops/quantization/quantize_loops.h"

#include <limits>

#include "ops/cpu_clones.h"

namespace weir {

namespace {

// Adding then subtracting 1.5 * 2^23 rounds an f32 of magnitude below 2^22
// to an integer, halves to even (the default rounding mode), as
// std::nearbyint does; unlike nearbyint it vectorizes on baseline x86-64.
// Without -ffast-math the compiler keeps both operations.
constexpr float kRoundingBias = 12582912.0f;

// saturate_round(in[i] / scale, zero) for every i. The quotient is clamped to
// [low - zero, high - zero] first: both ends are integers, so clamping before
// or after rounding gives the same value, and the clamped value is small
// enough for the rounding trick. NaN compares false both ways and becomes 0.
template <typename Q>
inline void quantize_body(const float* in, int64_t count, float scale, int32_t zero_point, Q* out) {
  const float low = static_cast<float>(std::numeric_limits<Q>::min() - zero_point);
  const float high = static_cast<float>(std::numeric_limits<Q>::max() - zero_point);
  const float zero = static_cast<float>(zero_point);
  for (int64_t i = 0; i < count; ++i) {
    float v = in[i] / scale;
    v = v == v ? v : 0.0f;
    v = v < low ? low : v;
    v = v > high ? high : v;
    v = (v + kRoundingBias) - kRoundingBias;
    out[i] = static_cast<Q>(static_cast<int32_t>(v + zero));
  }
}

template <typename Q>
inline void dequantize_body(const Q* in, int64_t count, float scale, int32_t zero_point, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(static_cast<int32_t>(in[i]) - zero_point) * scale;
}

WEIR_CPU_CLONES void quantize_u8(const float* in, int64_t count, float scale, int32_t zero_point, uint8_t* out) {
  quantize_body(in, count, scale, zero_point, out);
}

WEIR_CPU_CLONES void quantize_s8(const float* in, int64_t count, float scale, int32_t zero_point, int8_t* out) {
  quantize_body(in, count, scale, zero_point, out);
}

WEIR_CPU_CLONES void dequantize_u8(const uint8_t* in, int64_t count, float scale, int32_t zero_point, float* out) {
  dequantize_body(in, count, scale, zero_point, out);
}

WEIR_CPU_CLONES void dequantize_s8(const int8_t* in, int64_t count, float scale, int32_t zero_point, float* out) {
  dequantize_body(in, count, scale, zero_point, out);
}

}  // namespace

void quantize_f32(const float* in, int64_t count, float scale, int32_t zero_point, uint8_t* out) {
  quantize_u8(in, count, scale, zero_point, out);
}

void quantize_f32(const float* in, int64_t count, float scale, int32_t zero_point, int8_t* out) {
  quantize_s8(in, count, scale, zero_point, out);
}

void dequantize_to_f32(const uint8_t* in, int64_t count, float scale, int32_t zero_point, float* out) {
  dequantize_u8(in, count, scale, zero_point, out);
}

void dequantize_to_f32(const int8_t* in, int64_t count, float scale, int32_t zero_point, float* out) {
  dequantize_s8(in, count, scale, zero_point, out);
}

}  // namespace weir
