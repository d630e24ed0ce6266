// The pooling windows the CUDA pooling tests run (pool_on_backend_test.cc
// on the GPU, pool_windows_test.cc on the host): LeNet's and ResNet's
// windows, ceil_mode, dilations, asymmetric and auto pads, windows wholly
// in the padding, 1-D and 3-D, overlapping windows.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/attribute.h"

namespace weir::testing {

struct PoolCase {
  std::string label;
  std::vector<int64_t> x;
  std::map<std::string, Attribute> attributes;
};

inline std::vector<PoolCase> pool_cases() {
  auto ints = [](std::vector<int64_t> values) { return Attribute(std::move(values)); };
  return {
      {"LeNet 2x2/2", {8, 6, 28, 28}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}},
      {"ResNet 3x3/2 pad 1, odd", {2, 4, 17, 15},
       {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}},
      {"ceil_mode", {1, 3, 10, 9},
       {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"ceil_mode", Attribute(int64_t{1})}}},
      {"ceil_mode, pads", {2, 2, 8, 11},
       {{"kernel_shape", ints({2, 3})}, {"strides", ints({3, 2})}, {"pads", ints({1, 0, 1, 1})},
        {"ceil_mode", Attribute(int64_t{1})}}},
      {"dilations", {2, 2, 11, 11},
       {{"kernel_shape", ints({3, 3})}, {"dilations", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}}},
      {"asymmetric pads", {2, 3, 9, 10},
       {{"kernel_shape", ints({3, 2})}, {"strides", ints({1, 2})}, {"pads", ints({0, 1, 2, 1})}}},
      {"SAME_UPPER", {1, 2, 9, 8},
       {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"auto_pad", Attribute("SAME_UPPER")}}},
      {"windows in the padding", {1, 2, 4, 5}, {{"kernel_shape", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}}},
      {"1-D", {2, 3, 20}, {{"kernel_shape", ints({4})}, {"strides", ints({3})}, {"pads", ints({1, 2})}}},
      {"3-D", {1, 2, 6, 7, 5}, {{"kernel_shape", ints({2, 3, 2})}, {"strides", ints({2, 1, 2})}}},
      {"3-D, pads, dilation", {2, 1, 5, 6, 7},
       {{"kernel_shape", ints({2, 2, 3})}, {"dilations", ints({2, 1, 1})}, {"pads", ints({1, 0, 1, 0, 1, 1})}}},
      {"overlapping 3x3/1", {3, 5, 7, 6}, {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}}},
  };
}

}  // namespace weir::testing
