// Which axes a Reduce* node reduces, shared by shape inference and kernels.
//
//   ReduceAxes axes = ReduceAxes::of(node);            // reads axes, keepdims, noop_with_empty_axes
//   std::vector<bool> reduced = axes.resolve(rank, fail);   // per axis
//   std::vector<int64_t> kept = axes.kept_sizes(sizes, reduced);   // reduced axes -> 1
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph.h"

namespace weir {

struct ReduceAxes {
  std::vector<int64_t> axes;  // as written; may be negative
  bool keepdims = true;
  bool noop_with_empty_axes = false;

  static ReduceAxes of(const Node& node);

  // A flag per axis: reduced or not. No axes means all of them, unless
  // noop_with_empty_axes (then none). Calls fail(message) on an axis out of
  // range or repeated; fail must not return.
  std::vector<bool> resolve(int64_t rank, const std::function<void(const std::string&)>& fail) const;
  // The input's sizes with reduced axes set to 1 (the keepdims shape).
  static std::vector<int64_t> kept_sizes(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced);
  // The output sizes: kept_sizes, without the reduced axes unless keepdims.
  std::vector<int64_t> output_sizes(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced) const;
};

}  // namespace weir
