#include "ops/cuda/strided_copy.h"

#include <cstdint>
#include <string>

#include "core/shape.h"
#include "ops/cuda/cuda_kernel_util.h"

namespace weir::cuda {

std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t axis = sizes.size(); axis-- > 1;) strides[axis - 1] = strides[axis] * sizes[axis];
  return strides;
}

size_t widen_layout(StridedCopy& layout, size_t element_size, const void* src, const void* dst) {
  if (layout.rank == 0) return element_size;
  const int last = layout.rank - 1;
  if (layout.src_strides[last] != 1 || layout.dst_strides[last] != 1) return element_size;
  for (size_t word : {size_t{16}, size_t{8}, size_t{4}, size_t{2}}) {
    if (word <= element_size || word % element_size != 0) continue;
    const auto factor = static_cast<int64_t>(word / element_size);
    bool fits = layout.sizes[last] % factor == 0 && reinterpret_cast<uintptr_t>(src) % word == 0 &&
                reinterpret_cast<uintptr_t>(dst) % word == 0;
    for (int axis = 0; fits && axis < last; ++axis) {
      fits = layout.src_strides[axis] % factor == 0 && layout.dst_strides[axis] % factor == 0;
    }
    if (!fits) continue;
    layout.sizes[last] /= factor;
    for (int axis = 0; axis < last; ++axis) {
      layout.src_strides[axis] /= factor;
      layout.dst_strides[axis] /= factor;
    }
    return word;
  }
  return element_size;
}

std::optional<StridedCopy> merged_layout(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                                         const std::vector<int64_t>& dst_strides) {
  std::vector<int64_t> merged_sizes, merged_src, merged_dst;
  for (size_t axis = 0; axis < sizes.size(); ++axis) {
    if (sizes[axis] == 1) continue;
    if (!merged_sizes.empty() && merged_src.back() == src_strides[axis] * sizes[axis] &&
        merged_dst.back() == dst_strides[axis] * sizes[axis]) {
      merged_sizes.back() *= sizes[axis];
      merged_src.back() = src_strides[axis];
      merged_dst.back() = dst_strides[axis];
      continue;
    }
    merged_sizes.push_back(sizes[axis]);
    merged_src.push_back(src_strides[axis]);
    merged_dst.push_back(dst_strides[axis]);
  }
  if (merged_sizes.size() > static_cast<size_t>(StridedCopy::kMaxRank)) return std::nullopt;
  StridedCopy layout;
  layout.rank = static_cast<int>(merged_sizes.size());
  for (size_t axis = 0; axis < merged_sizes.size(); ++axis) {
    layout.sizes[axis] = merged_sizes[axis];
    layout.src_strides[axis] = merged_src[axis];
    layout.dst_strides[axis] = merged_dst[axis];
  }
  return layout;
}

std::optional<TransposeTiles> transpose_tiles(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                                              int64_t min_side) {
  // The output is dense, so only the input side decides what merges.
  std::vector<int64_t> merged_sizes, merged_strides;
  for (size_t axis = 0; axis < sizes.size(); ++axis) {
    if (sizes[axis] == 1) continue;
    if (!merged_sizes.empty() && merged_strides.back() == src_strides[axis] * sizes[axis]) {
      merged_sizes.back() *= sizes[axis];
      merged_strides.back() = src_strides[axis];
      continue;
    }
    merged_sizes.push_back(sizes[axis]);
    merged_strides.push_back(src_strides[axis]);
  }
  const size_t n = merged_sizes.size();
  if (n != 2 && n != 3) return std::nullopt;
  TransposeTiles tiles;
  tiles.rows = merged_sizes[n - 1];
  tiles.cols = merged_sizes[n - 2];
  tiles.batch = n == 3 ? merged_sizes[0] : 1;
  if (merged_strides[n - 1] != tiles.cols || merged_strides[n - 2] != 1) return std::nullopt;
  if (n == 3 && merged_strides[0] != tiles.rows * tiles.cols) return std::nullopt;
  if (tiles.rows < min_side || tiles.cols < min_side) return std::nullopt;
  return tiles;
}

void copy_strided(const KernelContext& ctx, size_t element_size, const void* src, void* dst,
                  const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                  const std::vector<int64_t>& dst_strides, const char* what) {
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  if (count == 0) return;
  std::optional<StridedCopy> layout = merged_layout(sizes, src_strides, dst_strides);
  if (!layout) {
    ctx.fail(std::string(what) + " of " + format_sizes(sizes) + " needs more strided axes than the CUDA kernel takes (" +
             std::to_string(StridedCopy::kMaxRank) + ")");
  }
  const size_t word = widen_layout(*layout, element_size, src, dst);
  launch_strided_copy(word, src, dst, *layout, count / static_cast<int64_t>(word / element_size), cuda_stream(ctx));
  check_launch(ctx, "strided_copy_kernel");
}

}  // namespace weir::cuda
