// The chunk tables of multi-tensor launches (ops/cuda/multi_tensor.h),
// checked on the host (no GPU needed): every chunk of every tensor is in
// exactly one launch, each launch within the table's limits, the chunk
// ranges cover each tensor exactly, and the global chunk indices (where
// per-chunk partial sums are stored) are consecutive in list order.
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ops/cuda/multi_tensor.h"

namespace weir::cuda {
namespace {

struct Covered {
  int launches = 0;
  // (tensor, chunk) -> the global chunk index the launch gave it.
  std::map<std::pair<int, int64_t>, int64_t> chunks;
};

Covered cover(const std::vector<int64_t>& counts) {
  std::vector<TensorRefs<2>> refs;
  // Distinct fake pointers, to check each slot points at its own tensor.
  for (size_t t = 0; t < counts.size(); ++t) {
    refs.push_back({{reinterpret_cast<void*>(0x1000 * (t + 1)), reinterpret_cast<void*>(0x1000 * (t + 1) + 8)}, counts[t]});
  }
  Covered covered;
  launch_in_batches<2>(refs.data(), static_cast<int>(refs.size()), [&](const TensorListBatch<2>& batch) {
    ++covered.launches;
    EXPECT_GT(batch.blocks, 0);
    EXPECT_LE(batch.blocks, kListMaxBlocks);
    EXPECT_LE(batch.tensors, kListMaxTensors);
    for (int b = 0; b < batch.blocks; ++b) {
      const int slot = batch.block_tensor[b];
      ASSERT_LT(slot, batch.tensors);
      const int t = batch.tensor_index[slot];
      ASSERT_GE(t, 0);
      ASSERT_LT(static_cast<size_t>(t), counts.size());
      EXPECT_EQ(batch.data[0][slot], refs[static_cast<size_t>(t)].data[0]);
      EXPECT_EQ(batch.data[1][slot], refs[static_cast<size_t>(t)].data[1]);
      EXPECT_EQ(batch.count[slot], counts[static_cast<size_t>(t)]);
      const int64_t chunk = batch.block_chunk[b];
      EXPECT_LT(chunk * kListChunk, counts[static_cast<size_t>(t)]);
      const bool inserted = covered.chunks.emplace(std::make_pair(t, chunk), batch.first_chunk[slot] + chunk).second;
      EXPECT_TRUE(inserted) << "tensor " << t << " chunk " << chunk << " launched twice";
    }
  });
  return covered;
}

void expect_covers(const std::vector<int64_t>& counts) {
  Covered covered = cover(counts);
  int64_t expected_global = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    const int64_t chunks = (counts[t] + kListChunk - 1) / kListChunk;
    for (int64_t k = 0; k < chunks; ++k) {
      auto it = covered.chunks.find({static_cast<int>(t), k});
      ASSERT_NE(it, covered.chunks.end()) << "tensor " << t << " chunk " << k << " never launched";
      EXPECT_EQ(it->second, expected_global) << "tensor " << t << " chunk " << k;
      ++expected_global;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(covered.chunks.size()), expected_global);
}

TEST(MultiTensorBatches, CoverEveryChunkOnce) {
  expect_covers({1});
  expect_covers({kListChunk});
  expect_covers({kListChunk + 1, 7, 0, 3 * kListChunk - 1});
  // A tensor longer than one launch's blocks, straddling launches.
  expect_covers({5, kListMaxBlocks * kListChunk + 3, 9});
  // More tensors than a launch's table holds.
  std::vector<int64_t> many;
  for (int64_t i = 0; i < 3 * kListMaxTensors + 5; ++i) many.push_back(1 + i * 1000);
  expect_covers(many);
  // Exactly a full table of blocks, then more tensors.
  expect_covers({(kListMaxBlocks - 1) * kListChunk, kListChunk, 1, 2});
}

TEST(MultiTensorBatches, SplitOnlyWhereATableIsFull) {
  EXPECT_EQ(cover({}).launches, 0);
  EXPECT_EQ(cover({0, 0}).launches, 0);
  EXPECT_EQ(cover({10, 20, 30}).launches, 1);
  EXPECT_EQ(cover({kListMaxBlocks * kListChunk}).launches, 1);
  EXPECT_EQ(cover({kListMaxBlocks * kListChunk + 1}).launches, 2);
  EXPECT_EQ(cover(std::vector<int64_t>(kListMaxTensors, 1)).launches, 1);
  EXPECT_EQ(cover(std::vector<int64_t>(kListMaxTensors + 1, 1)).launches, 2);
}

}  // namespace
}  // namespace weir::cuda
