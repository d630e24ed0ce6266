// Inputs the CUDA kernel tests build: random tensors in a small range, so
// that 16-bit results keep most of their precision, and ints attributes.
//
//   Tensor x = uniform(DType::kFloat16, {2, 3, 8, 8}, /*seed=*/7);        // values in [-1, 1]
//   attributes["kernel_shape"] = ints({3, 3});
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/attribute.h"
#include "core/tensor.h"
#include "tests/ops/op_test_util.h"

namespace weir::testing {

// A tensor of `dtype` and `sizes` holding random_values(dtype, ..., seed, low, high).
inline Tensor uniform(DType dtype, const std::vector<int64_t>& sizes, uint32_t seed, double low = -1.0,
                      double high = 1.0) {
  return make_tensor(dtype, random_values(dtype, count_of(sizes), seed, low, high), sizes);
}

inline Attribute ints(std::vector<int64_t> values) { return Attribute(std::move(values)); }

}  // namespace weir::testing
