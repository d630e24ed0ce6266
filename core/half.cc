#include "core/half.h"

namespace weir {

namespace {

// Rounds `value >> shift` to nearest, ties to even, given shift >= 1.
uint32_t shift_right_round_even(uint32_t value, int shift) {
  uint32_t kept = value >> shift;
  uint32_t remainder = value & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (kept & 1u))) ++kept;
  return kept;
}

}  // namespace

uint16_t float_to_f16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;

  if (magnitude > 0x7F800000u) {
    // NaN: quiet bit forced, top 9 payload bits kept.
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x03FFu));
  }
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  const uint32_t mantissa = magnitude & 0x007FFFFFu;

  if (exponent >= 16) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow or infinity
  if (exponent >= -14) {
    // Normal f16. A carry out of the mantissa bumps the exponent, and out of
    // exponent 30 gives 0x7C00: infinity, as rounding requires.
    uint32_t packed = (static_cast<uint32_t>(exponent + 15) << 23) | mantissa;
    return static_cast<uint16_t>(sign | shift_right_round_even(packed, 13));
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal: zero
  // Subnormal f16: the value is (mantissa | implicit one) * 2^(exponent - 23),
  // in units of the smallest subnormal 2^-24 that is a right shift by -exponent - 1.
  const uint32_t significand = mantissa | 0x00800000u;
  return static_cast<uint16_t>(sign | shift_right_round_even(significand, -exponent - 1));
}

float f16_bits_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1Fu;
  uint32_t mantissa = half & 0x03FFu;
  uint32_t bits;
  if (exponent == 0x1Fu) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // infinity or NaN, payload kept
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);  // 112 = 127 - 15
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal: normalise so the leading one becomes the implicit bit.
    int float_exponent = 113;  // 127 - 14: exponent of the smallest normal f16
    while ((mantissa & 0x0400u) == 0) {
      mantissa <<= 1;
      --float_exponent;
    }
    bits = sign | (static_cast<uint32_t>(float_exponent) << 23) | ((mantissa & 0x03FFu) << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace weir
