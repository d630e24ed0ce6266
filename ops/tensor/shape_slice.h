// The [start, end) range of dims that Shape returns (ONNX opset 15 added the
// `start` and `end` attributes): negative values count from the back, and
// both are clamped to [0, rank]; start >= end gives an empty shape.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/graph.h"

namespace weir {

inline std::pair<int64_t, int64_t> shape_slice(const Node& node, int64_t rank) {
  auto resolve = [rank](int64_t index) { return std::clamp<int64_t>(index < 0 ? index + rank : index, 0, rank); };
  int64_t start = resolve(node.has_attr("start") ? node.attr("start").i() : 0);
  int64_t end = resolve(node.has_attr("end") ? node.attr("end").i() : rank);
  return {start, std::max(start, end)};
}

}  // namespace weir
