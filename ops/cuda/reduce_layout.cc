#include "ops/cuda/reduce_layout.h"

namespace weir::cuda {

namespace {

std::vector<int64_t> dense(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t axis = sizes.size(); axis-- > 1;) strides[axis - 1] = strides[axis] * sizes[axis];
  return strides;
}

}  // namespace

std::optional<ReduceLayout> reduce_layout(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced) {
  struct Axis {
    int64_t size, stride;
    bool reduced;
  };
  const std::vector<int64_t> strides = dense(sizes);
  std::vector<Axis> axes;
  for (size_t a = 0; a < sizes.size(); ++a) {
    if (sizes[a] == 1) continue;
    // Dense, with size-1 axes gone: neighbours are contiguous, so two of a kind are one axis.
    if (!axes.empty() && axes.back().reduced == reduced[a]) {
      axes.back().size *= sizes[a];
      axes.back().stride = strides[a];
      continue;
    }
    axes.push_back({sizes[a], strides[a], reduced[a]});
  }
  ReduceLayout layout;
  for (const Axis& axis : axes) {
    int& rank = axis.reduced ? layout.reduced_rank : layout.kept_rank;
    if (rank == ReduceLayout::kMaxRank) return std::nullopt;
    (axis.reduced ? layout.reduced_sizes : layout.kept_sizes)[rank] = axis.size;
    (axis.reduced ? layout.reduced_strides : layout.kept_strides)[rank] = axis.stride;
    ++rank;
    (axis.reduced ? layout.count : layout.outputs) *= axis.size;
  }
  return layout;
}

std::optional<BroadcastBackLayout> broadcast_back_layout(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced) {
  std::vector<int64_t> kept = sizes;
  for (size_t a = 0; a < kept.size(); ++a) {
    if (reduced[a]) kept[a] = 1;
  }
  const std::vector<int64_t> kept_strides = dense(kept);
  std::vector<int64_t> merged_sizes, merged_strides;
  for (size_t a = 0; a < sizes.size(); ++a) {
    if (sizes[a] == 1) continue;
    const int64_t stride = reduced[a] ? 0 : kept_strides[a];
    // Neighbours that step dY alike merge: both reduced, or both kept (contiguous in dY).
    if (!merged_sizes.empty() && merged_strides.back() == stride * sizes[a]) {
      merged_sizes.back() *= sizes[a];
      merged_strides.back() = stride;
      continue;
    }
    merged_sizes.push_back(sizes[a]);
    merged_strides.push_back(stride);
  }
  if (merged_sizes.size() > static_cast<size_t>(BroadcastBackLayout::kMaxRank)) return std::nullopt;
  BroadcastBackLayout layout;
  layout.rank = static_cast<int>(merged_sizes.size());
  for (size_t a = 0; a < merged_sizes.size(); ++a) {
    layout.sizes[a] = merged_sizes[a];
    layout.dy_strides[a] = merged_strides[a];
  }
  return layout;
}

}  // namespace weir::cuda
