#include "ops/elementwise/broadcast.h"

#include <algorithm>

namespace weir {

std::optional<std::vector<int64_t>> broadcast_sizes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

// Element strides of `sizes` right-aligned to `out`, 0 on broadcast axes.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& out, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    size_t axis = sizes.size() - 1 - i;
    size_t out_axis = out.size() - 1 - i;
    strides[out_axis] = sizes[axis] == 1 ? 0 : stride;
    stride *= sizes[axis];
  }
  return strides;
}

}  // namespace

BroadcastPlan::BroadcastPlan(const std::vector<int64_t>& out, const std::vector<int64_t>& a,
                             const std::vector<int64_t>& b) {
  num_elements_ = 1;
  for (int64_t size : out) num_elements_ *= size;
  std::vector<int64_t> sa = broadcast_strides(out, a);
  std::vector<int64_t> sb = broadcast_strides(out, b);
  // Drop size-1 axes, then merge an axis into the one inside it when both
  // operands continue contiguously across the boundary (or both broadcast).
  std::vector<int64_t> sizes, strides_a, strides_b;
  for (size_t axis = 0; axis < out.size(); ++axis) {
    if (out[axis] == 1) continue;
    sizes.push_back(out[axis]);
    strides_a.push_back(sa[axis]);
    strides_b.push_back(sb[axis]);
  }
  std::vector<int64_t> merged_sizes, merged_a, merged_b;
  for (size_t axis = 0; axis < sizes.size(); ++axis) {
    if (!merged_sizes.empty() && merged_a.back() == strides_a[axis] * sizes[axis] &&
        merged_b.back() == strides_b[axis] * sizes[axis]) {
      merged_sizes.back() *= sizes[axis];
      merged_a.back() = strides_a[axis];
      merged_b.back() = strides_b[axis];
      continue;
    }
    merged_sizes.push_back(sizes[axis]);
    merged_a.push_back(strides_a[axis]);
    merged_b.push_back(strides_b[axis]);
  }
  if (merged_sizes.empty()) {  // a scalar, or all axes of size 1
    inner_size_ = 1;
    return;
  }
  inner_size_ = merged_sizes.back();
  inner_stride_a_ = merged_a.back();
  inner_stride_b_ = merged_b.back();
  merged_sizes.pop_back();
  merged_a.pop_back();
  merged_b.pop_back();
  sizes_ = std::move(merged_sizes);
  stride_a_ = std::move(merged_a);
  stride_b_ = std::move(merged_b);
}

}  // namespace weir
