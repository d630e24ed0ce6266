// How many low bits a radix sort (cub::DeviceRadixSort's end_bit) must look
// at for non-negative keys up to `largest`: sorting only those bits is
// several passes fewer than sorting all 32 when the keys are small indices.
#pragma once

#include <cstdint>

namespace weir::cuda {

inline int sort_key_bits(int64_t largest) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) <= largest) ++bits;
  return bits;
}

}  // namespace weir::cuda
