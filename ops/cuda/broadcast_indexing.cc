#include "ops/cuda/broadcast_indexing.h"

namespace weir::cuda {

namespace {

// Row-major element strides of `sizes` right-aligned to `rank` axes, 0 along
// axes where the operand has size 1 (or is missing) and so is broadcast.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& sizes, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  int64_t running = 1;
  for (size_t axis = rank; axis-- > 0;) {
    const size_t missing = rank - sizes.size();
    const int64_t size = axis >= missing ? sizes[axis - missing] : 1;
    strides[axis] = size == 1 ? 0 : running;
    running *= size;
  }
  return strides;
}

}  // namespace

std::optional<BroadcastIndexing> broadcast_indexing(const std::vector<int64_t>& out, const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b) {
  const std::vector<int64_t> stride_a = broadcast_strides(a, out.size());
  const std::vector<int64_t> stride_b = broadcast_strides(b, out.size());
  struct Axis {
    int64_t size, stride_a, stride_b;
  };
  std::vector<Axis> axes;
  for (size_t axis = 0; axis < out.size(); ++axis) {
    if (out[axis] == 1) continue;  // reads index 0 of every operand: no axis needed
    Axis next{out[axis], stride_a[axis], stride_b[axis]};
    // An outer axis whose strides continue the inner one's in both operands
    // (both contiguous across it, or both broadcast) merges into one.
    if (!axes.empty() && axes.back().stride_a == next.stride_a * next.size &&
        axes.back().stride_b == next.stride_b * next.size) {
      axes.back() = {axes.back().size * next.size, next.stride_a, next.stride_b};
    } else {
      axes.push_back(next);
    }
  }
  if (axes.size() > static_cast<size_t>(BroadcastIndexing::kMaxRank)) return std::nullopt;
  BroadcastIndexing indexing;
  indexing.rank = static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    indexing.sizes[i] = axes[i].size;
    indexing.stride_a[i] = axes[i].stride_a;
    indexing.stride_b[i] = axes[i].stride_b;
  }
  return indexing;
}

std::optional<MultiBroadcastIndexing> broadcast_indexing(const std::vector<int64_t>& out,
                                                         const std::vector<std::vector<int64_t>>& operands) {
  std::vector<std::vector<int64_t>> strides;
  for (const std::vector<int64_t>& sizes : operands) strides.push_back(broadcast_strides(sizes, out.size()));
  struct Axis {
    int64_t size;
    std::vector<int64_t> strides;  // one per operand
  };
  std::vector<Axis> axes;
  for (size_t axis = 0; axis < out.size(); ++axis) {
    if (out[axis] == 1) continue;
    Axis next{out[axis], {}};
    for (const std::vector<int64_t>& s : strides) next.strides.push_back(s[axis]);
    // Merge with the outer axis where every operand's strides continue.
    bool merges = !axes.empty();
    for (size_t k = 0; merges && k < operands.size(); ++k) {
      merges = axes.back().strides[k] == next.strides[k] * next.size;
    }
    if (merges) {
      axes.back().size *= next.size;
      axes.back().strides = next.strides;
    } else {
      axes.push_back(std::move(next));
    }
  }
  if (axes.size() > static_cast<size_t>(MultiBroadcastIndexing::kMaxRank)) return std::nullopt;
  MultiBroadcastIndexing indexing;
  indexing.rank = static_cast<int>(axes.size());
  indexing.operands = static_cast<int>(operands.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    indexing.sizes[i] = axes[i].size;
    for (size_t k = 0; k < operands.size(); ++k) indexing.strides[k][i] = axes[i].strides[k];
  }
  return indexing;
}

}  // namespace weir::cuda
