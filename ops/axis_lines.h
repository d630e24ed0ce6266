// Kernels that work along one axis (softmax, cumulative sums, arg-extrema,
// top-k) view their tensor as [outer, n, inner] around that axis: each of the
// outer * inner "lines" is n elements `inner` apart.
//
//   AxisSplit split = split_at(ctx, x.sizes(), axis);   // axis may be negative
//   for_each_line(split, [&](int64_t base, int64_t stride) {
//     for (int64_t j = 0; j < split.n; ++j) use(x[base + j * stride]);
//   });
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/kernel.h"
#include "ops/threading.h"

namespace weir {

// Maps an axis in [-rank, rank) to [0, rank); fails naming the node otherwise.
inline int64_t resolve_axis(const KernelContext& ctx, int64_t axis, size_t rank) {
  auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

inline AxisSplit split_at(const KernelContext& ctx, const std::vector<int64_t>& sizes, int64_t axis) {
  axis = resolve_axis(ctx, axis, sizes.size());
  AxisSplit split;
  for (int64_t i = 0; i < static_cast<int64_t>(sizes.size()); ++i) {
    int64_t size = sizes[static_cast<size_t>(i)];
    if (i < axis) split.outer *= size;
    else if (i == axis) split.n = size;
    else split.inner *= size;
  }
  return split;
}

// Calls fn(base, stride) for every line along the axis: elements
// base + j * stride for j < n. Lines are split across threads.
template <typename Fn>
void for_each_line(const AxisSplit& split, Fn&& fn) {
  int64_t lines = split.outer * split.inner;
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(split.n, 1));
  parallel_for(lines, grain, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      int64_t o = line / split.inner, i = line % split.inner;
      fn(o * split.n * split.inner + i, split.inner);
    }
  });
}

}  // namespace weir
