// The layouts the CUDA data-movement and reduction kernels compute with
// (ops/cuda/strided_copy.h, ops/cuda/reduce_layout.h), checked on the host:
// the offsets the device's index arithmetic derives from a merged (and, for
// copies, widened) layout are exactly those of the plain per-element
// definition, for random transposes, slices with negative steps, expands,
// concat pieces, tilings and reductions over random axis sets. Needs no GPU.
#include <algorithm>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/shape.h"
#include "ops/cuda/reduce_layout.h"
#include "ops/cuda/strided_copy.h"

namespace weir {
namespace {

using Pairs = std::vector<std::pair<int64_t, int64_t>>;  // (destination byte, source byte)

std::vector<int64_t> dense(const std::vector<int64_t>& sizes) { return cuda::dense_strides(sizes); }

int64_t product(const std::vector<int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
}

// Every byte the copy moves, by the definition: each coordinate within `sizes`.
Pairs reference_copy(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                     int64_t element) {
  Pairs pairs;
  const int64_t count = product(sizes);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat, from = 0, to = 0;
    for (size_t axis = sizes.size(); axis-- > 0;) {
      const int64_t coordinate = rest % sizes[axis];
      rest /= sizes[axis];
      from += coordinate * src[axis];
      to += coordinate * dst[axis];
    }
    for (int64_t b = 0; b < element; ++b) pairs.emplace_back(to * element + b, from * element + b);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

// What strided_copy_kernel (tensor_device.cu) moves: words of `word` bytes.
Pairs device_copy(const cuda::StridedCopy& layout, int64_t count, int64_t word) {
  Pairs pairs;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, from = 0, to = 0;
    for (int axis = layout.rank - 1; axis >= 0; --axis) {
      const int64_t coordinate = rest % layout.sizes[axis];
      rest /= layout.sizes[axis];
      from += coordinate * layout.src_strides[axis];
      to += coordinate * layout.dst_strides[axis];
    }
    for (int64_t b = 0; b < word; ++b) pairs.emplace_back(to * word + b, from * word + b);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

void expect_copy_matches(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                         const std::string& what) {
  // Addresses aligned to 256 bytes, as allocations are.
  const auto* base = reinterpret_cast<const void*>(uintptr_t{1} << 20);
  for (int64_t element : {1, 2, 4, 8}) {
    std::optional<cuda::StridedCopy> layout = cuda::merged_layout(sizes, src, dst);
    ASSERT_TRUE(layout.has_value()) << what;
    cuda::StridedCopy widened = *layout;
    const auto word = static_cast<int64_t>(cuda::widen_layout(widened, static_cast<size_t>(element), base, base));
    ASSERT_EQ(word % element, 0) << what;
    const int64_t count = product(sizes) / (word / element);
    EXPECT_EQ(device_copy(widened, count, word), reference_copy(sizes, src, dst, element))
        << what << ", elements of " << element << " bytes in words of " << word;
    // Unaligned addresses keep the element size.
    cuda::StridedCopy unaligned = *layout;
    EXPECT_EQ(cuda::widen_layout(unaligned, static_cast<size_t>(element), static_cast<const char*>(base) + element, base),
              static_cast<size_t>(element))
        << what;
  }
}

TEST(DataMovementLayout, TransposeSliceExpandConcatAndTileCopiesMoveTheDefinedBytes) {
  std::mt19937 engine(29);
  auto pick = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(engine); };
  for (int trial = 0; trial < 200; ++trial) {
    const auto rank = static_cast<size_t>(pick(0, 5));
    std::vector<int64_t> in(rank);
    for (int64_t& size : in) size = pick(1, 5);
    const std::vector<int64_t> in_strides = dense(in);

    // Transpose: output axis i reads input axis perm[i].
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), engine);
    std::vector<int64_t> out(rank), src(rank);
    for (size_t i = 0; i < rank; ++i) {
      out[i] = in[static_cast<size_t>(perm[i])];
      src[i] = in_strides[static_cast<size_t>(perm[i])];
    }
    expect_copy_matches(out, src, dense(out), "transpose of " + format_sizes(in) + " by " + format_sizes(perm));

    // Slice: a step per axis, negative ones walking back from the end.
    std::vector<int64_t> counts(rank), steps(rank);
    for (size_t a = 0; a < rank; ++a) {
      do {
        steps[a] = pick(-2, 3);
      } while (steps[a] == 0);
      const int64_t span = steps[a] > 0 ? steps[a] : -steps[a];
      counts[a] = (in[a] + span - 1) / span;
      steps[a] *= in_strides[a];
    }
    expect_copy_matches(counts, steps, dense(counts), "slice of " + format_sizes(in) + " by " + format_sizes(steps));
    // SliceGrad: the dense gradient scattered to the slice's positions.
    expect_copy_matches(counts, dense(counts), steps, "slice gradient of " + format_sizes(in));

    // Expand: axes of size 1 read with stride 0, and a new leading axis.
    std::vector<int64_t> expanded = {pick(1, 3)}, expand_src = {0};
    for (size_t a = 0; a < rank; ++a) {
      const bool broadcast = in[a] == 1;
      expanded.push_back(broadcast ? pick(1, 4) : in[a]);
      expand_src.push_back(broadcast ? 0 : in_strides[a]);
    }
    expect_copy_matches(expanded, expand_src, dense(expanded), "expand of " + format_sizes(in));

    // Tile: the output as [r0, s0, r1, s1, ...].
    std::vector<int64_t> view, tile_src, tile_dst, tiled(rank);
    for (size_t a = 0; a < rank; ++a) tiled[a] = in[a] * pick(1, 3);
    const std::vector<int64_t> tiled_strides = dense(tiled);
    for (size_t a = 0; a < rank; ++a) {
      view.insert(view.end(), {tiled[a] / in[a], in[a]});
      tile_src.insert(tile_src.end(), {0, in_strides[a]});
      tile_dst.insert(tile_dst.end(), {in[a] * tiled_strides[a], tiled_strides[a]});
    }
    expect_copy_matches(view, tile_src, tile_dst, "tile of " + format_sizes(in) + " to " + format_sizes(tiled));

    // A concat piece: [outer, piece row] within [outer, joined row].
    const int64_t outer = pick(1, 4), piece = pick(1, 9), joined = piece + pick(0, 9);
    expect_copy_matches({outer, piece}, {piece, 1}, {joined, 1}, "concat piece");
    expect_copy_matches({outer, piece}, {joined, 1}, {piece, 1}, "split piece");
  }
}

// What transpose_tiled_kernel (tensor_device.cu) moves, tile by tile as
// the kernel walks them: out[b][c][r] = in[b][r][c].
Pairs device_tiled(const cuda::TransposeTiles& t) {
  constexpr int64_t kTile = 32;
  Pairs pairs;
  const int64_t tiles_r = (t.rows + kTile - 1) / kTile, tiles_c = (t.cols + kTile - 1) / kTile;
  for (int64_t tile = 0; tile < t.batch * tiles_r * tiles_c; ++tile) {
    const int64_t b = tile / (tiles_r * tiles_c), rest = tile % (tiles_r * tiles_c);
    const int64_t r0 = (rest / tiles_c) * kTile, c0 = (rest % tiles_c) * kTile;
    for (int64_t x = 0; x < kTile; ++x) {
      for (int64_t j = 0; j < kTile; ++j) {
        // Written by thread x of row j: tile[x][j], loaded from in[r0 + x][c0 + j].
        const int64_t c = c0 + j, r = r0 + x;
        if (c < t.cols && r < t.rows) pairs.emplace_back(b * t.rows * t.cols + c * t.rows + r, b * t.rows * t.cols + r * t.cols + c);
      }
    }
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

TEST(DataMovementLayout, TiledTransposesAreExactlyTheTransposesTheyReplace) {
  std::mt19937 engine(32);
  auto pick = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(engine); };
  int tiled = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const auto rank = static_cast<size_t>(pick(2, 5));
    std::vector<int64_t> in(rank);
    for (int64_t& size : in) size = pick(0, 3) == 0 ? 1 : pick(2, 40);
    if (product(in) > 50000) continue;  // the reference walks every element
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    // Mostly swaps of two neighbouring runs of axes (the tiled cases), sometimes any order.
    if (pick(0, 3) == 0) {
      std::shuffle(perm.begin(), perm.end(), engine);
    } else {
      const auto lead = static_cast<size_t>(pick(0, static_cast<int64_t>(rank) - 2));
      const auto split = static_cast<size_t>(pick(static_cast<int64_t>(lead) + 1, static_cast<int64_t>(rank) - 1));
      std::rotate(perm.begin() + static_cast<int64_t>(lead), perm.begin() + static_cast<int64_t>(split), perm.end());
    }
    const std::vector<int64_t> in_strides = dense(in);
    std::vector<int64_t> out(rank), src(rank);
    for (size_t i = 0; i < rank; ++i) {
      out[i] = in[static_cast<size_t>(perm[i])];
      src[i] = in_strides[static_cast<size_t>(perm[i])];
    }
    std::optional<cuda::TransposeTiles> tiles = cuda::transpose_tiles(out, src, 8);
    if (!tiles) continue;
    ++tiled;
    EXPECT_GE(tiles->rows, 8);
    EXPECT_GE(tiles->cols, 8);
    EXPECT_EQ(device_tiled(*tiles), reference_copy(out, src, dense(out), 1))
        << "transpose of " << format_sizes(in) << " by " << format_sizes(perm);
  }
  EXPECT_GT(tiled, 50) << "the trials should exercise the tiled path";
  // NCHW -> NHWC is tiled with rows = C; a 3-channel image is not (too short).
  std::optional<cuda::TransposeTiles> nhwc = cuda::transpose_tiles({2, 7, 9, 33}, {33 * 63, 9, 1, 63}, 8);
  ASSERT_TRUE(nhwc.has_value());
  EXPECT_EQ(nhwc->batch, 2);
  EXPECT_EQ(nhwc->rows, 33);
  EXPECT_EQ(nhwc->cols, 63);
  EXPECT_FALSE(cuda::transpose_tiles({1, 224, 224, 3}, {3 * 224 * 224, 224, 1, 224 * 224}, 8).has_value());
}

// What reduce_lines and reduce_columns (reduce_device.cu) read for output o.
std::vector<int64_t> device_reads(const cuda::ReduceLayout& layout, int64_t o) {
  int64_t base = 0;
  for (int axis = layout.kept_rank - 1; axis >= 0; --axis) {
    base += (o % layout.kept_sizes[axis]) * layout.kept_strides[axis];
    o /= layout.kept_sizes[axis];
  }
  std::vector<int64_t> reads;
  for (int64_t r = 0; r < layout.count; ++r) {
    int64_t offset = 0;
    if (layout.reduced_rank == 1) {
      offset = r * layout.reduced_strides[0];
    } else {
      int64_t rest = r;
      for (int axis = layout.reduced_rank - 1; axis >= 0; --axis) {
        offset += (rest % layout.reduced_sizes[axis]) * layout.reduced_strides[axis];
        rest /= layout.reduced_sizes[axis];
      }
    }
    reads.push_back(base + offset);
  }
  std::sort(reads.begin(), reads.end());
  return reads;
}

TEST(DataMovementLayout, ReductionsReadEachOutputsElementsOnce) {
  std::mt19937 engine(18);
  auto pick = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(engine); };
  for (int trial = 0; trial < 300; ++trial) {
    const auto rank = static_cast<size_t>(pick(0, 6));
    std::vector<int64_t> sizes(rank);
    std::vector<bool> reduced(rank);
    for (size_t a = 0; a < rank; ++a) {
      sizes[a] = pick(0, 9) == 0 ? 0 : pick(1, 4);
      reduced[a] = pick(0, 1) == 1;
    }
    std::vector<int64_t> kept = sizes;
    for (size_t a = 0; a < rank; ++a) {
      if (reduced[a]) kept[a] = 1;
    }
    const std::string what = format_sizes(sizes);
    std::optional<cuda::ReduceLayout> layout = cuda::reduce_layout(sizes, reduced);
    ASSERT_TRUE(layout.has_value()) << what;
    const int64_t outputs = product(kept);
    ASSERT_EQ(layout->outputs, outputs) << what;
    if (outputs > 0) {
      ASSERT_EQ(layout->count, product(sizes) / outputs) << what;
    }
    // By the definition: input element p goes to the output at its kept coordinates.
    std::vector<std::vector<int64_t>> want(static_cast<size_t>(outputs));
    const std::vector<int64_t> kept_strides = dense(kept);
    std::vector<int64_t> slots;
    for (int64_t p = 0; p < product(sizes); ++p) {
      int64_t rest = p, slot = 0;
      for (size_t axis = rank; axis-- > 0;) {
        const int64_t coordinate = rest % sizes[axis];
        rest /= sizes[axis];
        if (!reduced[axis]) slot += coordinate * kept_strides[axis];
      }
      want[static_cast<size_t>(slot)].push_back(p);
      slots.push_back(slot);
    }
    for (int64_t o = 0; o < outputs; ++o) {
      EXPECT_EQ(device_reads(*layout, o), want[static_cast<size_t>(o)]) << what << " output " << o;
    }
    // The broadcast back: element p reads dY at the same slot.
    std::optional<cuda::BroadcastBackLayout> back = cuda::broadcast_back_layout(sizes, reduced);
    ASSERT_TRUE(back.has_value()) << what;
    for (int64_t p = 0; p < product(sizes); ++p) {
      int64_t rest = p, slot = 0;
      for (int axis = back->rank - 1; axis >= 0; --axis) {
        slot += (rest % back->sizes[axis]) * back->dy_strides[axis];
        rest /= back->sizes[axis];
      }
      EXPECT_EQ(slot, slots[static_cast<size_t>(p)]) << what << " element " << p;
    }
  }
}

}  // namespace
}  // namespace weir
