// IEEE binary16 (f16) and bfloat16 (bf16) scalars and their conversions.
//
// float -> f16/bf16 rounds to nearest, ties to even; NaN stays NaN (quiet,
// sign kept) and infinities stay infinite. f16/bf16 -> float is exact.
//
//   weir::Float16 h = weir::Float16::from_float(0.1f);   // bits 0x2E66
//   float back = h.to_float();                            // 0.0999755859375f
//   weir::BFloat16 b(3.14159f);                           // bits 0x4049
//   uint16_t raw = b.bits;
//
// Both are trivially copyable 2-byte structs, so arrays of them are the raw
// tensor storage of kFloat16 / kBFloat16 tensors.
#pragma once

#include <cstdint>
#include <cstring>

namespace weir {

uint16_t float_to_f16_bits(float value);
float f16_bits_to_float(uint16_t bits);

// bf16 is the upper half of a float, so both directions are a few integer
// operations; they are inline because elementwise kernels call them per element.
inline uint16_t float_to_bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    // NaN: keep the sign and the top of the payload, force the quiet bit so a
    // payload that lives only in the dropped low bits cannot become infinity.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // Round to nearest even: add 0x7FFF plus the lowest kept bit, then truncate.
  // Overflow past the largest finite value carries into the exponent and
  // correctly produces infinity.
  uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

inline float bf16_bits_to_float(uint16_t bits) {
  uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof(value));
  return value;
}

struct Float16 {
  uint16_t bits = 0;

  Float16() = default;
  explicit Float16(float value) : bits(float_to_f16_bits(value)) {}
  static Float16 from_bits(uint16_t raw) {
    Float16 h;
    h.bits = raw;
    return h;
  }
  static Float16 from_float(float value) { return Float16(value); }
  float to_float() const { return f16_bits_to_float(bits); }
  explicit operator float() const { return to_float(); }
};

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float value) : bits(float_to_bf16_bits(value)) {}
  static BFloat16 from_bits(uint16_t raw) {
    BFloat16 b;
    b.bits = raw;
    return b;
  }
  static BFloat16 from_float(float value) { return BFloat16(value); }
  float to_float() const { return bf16_bits_to_float(bits); }
  explicit operator float() const { return to_float(); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

}  // namespace weir
