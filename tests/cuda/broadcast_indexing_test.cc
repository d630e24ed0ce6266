// The strides the CUDA elementwise kernels broadcast with
// (ops/cuda/broadcast_indexing.h), checked on the host: for every output
// element, the offsets the device's index arithmetic computes equal those of
// the reference broadcasting of the op tests, and axes collapse as far as
// the operands allow. Needs no GPU.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "ops/cuda/broadcast_indexing.h"
#include "ops/elementwise/broadcast.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

// What binary_kernel in elementwise_device.cu computes for element `flat`.
std::pair<int64_t, int64_t> device_offsets(const cuda::BroadcastIndexing& indexing, int64_t flat) {
  int64_t a = 0, b = 0;
  for (int axis = indexing.rank - 1; axis >= 0; --axis) {
    const int64_t coordinate = flat % indexing.sizes[axis];
    flat /= indexing.sizes[axis];
    a += coordinate * indexing.stride_a[axis];
    b += coordinate * indexing.stride_b[axis];
  }
  return {a, b};
}

void expect_offsets_match(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  auto out = broadcast_sizes(a, b);
  ASSERT_TRUE(out.has_value());
  std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(*out, a, b);
  ASSERT_TRUE(indexing.has_value());
  const int64_t count = testing::count_of(*out);
  for (int64_t flat = 0; flat < count; ++flat) {
    auto [offset_a, offset_b] = device_offsets(*indexing, flat);
    ASSERT_EQ(offset_a, testing::broadcast_offset(flat, *out, a)) << "element " << flat;
    ASSERT_EQ(offset_b, testing::broadcast_offset(flat, *out, b)) << "element " << flat;
  }
}

TEST(CudaBroadcastIndexing, OffsetsMatchTheReferenceOnRandomShapes) {
  std::mt19937 engine(7);
  std::uniform_int_distribution<int> rank_of(0, 6), size_of(1, 4), coin(0, 2);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int64_t> out(static_cast<size_t>(rank_of(engine)));
    for (int64_t& size : out) size = size_of(engine);
    // Each operand: a suffix of the output's axes, each kept or broadcast (1).
    auto operand = [&] {
      std::vector<int64_t> sizes(out.end() - std::uniform_int_distribution<int>(0, static_cast<int>(out.size()))(engine), out.end());
      for (int64_t& size : sizes) {
        if (coin(engine) == 0) size = 1;
      }
      return sizes;
    };
    expect_offsets_match(operand(), operand());
  }
}

TEST(CudaBroadcastIndexing, AxesCollapseAsFarAsTheOperandsAllow) {
  auto rank_of = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    return cuda::broadcast_indexing(*broadcast_sizes(a, b), a, b)->rank;
  };
  EXPECT_EQ(rank_of({4, 5, 6}, {4, 5, 6}), 1) << "same shapes: one contiguous axis";
  EXPECT_EQ(rank_of({4, 5, 6}, {}), 1) << "a scalar: one axis, stride 0";
  EXPECT_EQ(rank_of({4, 5, 6}, {6}), 2) << "a row: rows x columns";
  EXPECT_EQ(rank_of({4, 5, 6}, {5, 6}), 2);
  EXPECT_EQ(rank_of({4, 1, 6}, {1, 5, 1}), 3);
  EXPECT_EQ(rank_of({1, 1}, {1}), 0) << "one element: no axis at all";
  // Alternating broadcast axes cannot collapse: past kMaxRank the kernels refuse.
  std::vector<int64_t> a, b;
  for (int i = 0; i < 9; ++i) {
    a.push_back(i % 2 == 0 ? 2 : 1);
    b.push_back(i % 2 == 0 ? 1 : 2);
  }
  EXPECT_FALSE(cuda::broadcast_indexing(*broadcast_sizes(a, b), a, b).has_value());
  expect_offsets_match({2, 1, 3, 1, 2, 1, 3}, {1, 2, 1, 3, 1, 2, 1});
}

// The many-operand indexing (Sum, Mean, Max, Min, Where): what
// variadic_kernel in elementwise_device.cu computes for operand k of
// element `flat`, against the reference broadcasting.
int64_t device_offset(const cuda::MultiBroadcastIndexing& indexing, int k, int64_t flat) {
  int64_t offset = 0;
  for (int axis = indexing.rank - 1; axis >= 0; --axis) {
    offset += (flat % indexing.sizes[axis]) * indexing.strides[k][axis];
    flat /= indexing.sizes[axis];
  }
  return offset;
}

TEST(CudaBroadcastIndexing, ManyOperandOffsetsMatchTheReferenceOnRandomShapes) {
  std::mt19937 engine(11);
  std::uniform_int_distribution<int> rank_of(0, 6), size_of(1, 4), coin(0, 2), operands_of(1, 5);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> out(static_cast<size_t>(rank_of(engine)));
    for (int64_t& size : out) size = size_of(engine);
    std::vector<std::vector<int64_t>> operands(static_cast<size_t>(operands_of(engine)));
    std::vector<int64_t> broadcast;
    for (std::vector<int64_t>& sizes : operands) {
      sizes.assign(out.end() - std::uniform_int_distribution<int>(0, static_cast<int>(out.size()))(engine), out.end());
      for (int64_t& size : sizes) {
        if (coin(engine) == 0) size = 1;
      }
      broadcast = *broadcast_sizes(broadcast, sizes);
    }
    std::optional<cuda::MultiBroadcastIndexing> indexing = cuda::broadcast_indexing(broadcast, operands);
    ASSERT_TRUE(indexing.has_value());
    ASSERT_EQ(indexing->operands, static_cast<int>(operands.size()));
    for (int64_t flat = 0; flat < testing::count_of(broadcast); ++flat) {
      for (size_t k = 0; k < operands.size(); ++k) {
        ASSERT_EQ(device_offset(*indexing, static_cast<int>(k), flat), testing::broadcast_offset(flat, broadcast, operands[k]))
            << "trial " << trial << ", operand " << k << ", element " << flat;
      }
    }
  }
}

TEST(CudaBroadcastIndexing, ManyOperandAxesCollapseOnlyWhereEveryOperandAllows) {
  auto rank_of = [](const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& operands) {
    return cuda::broadcast_indexing(out, operands)->rank;
  };
  EXPECT_EQ(rank_of({4, 5, 6}, {{4, 5, 6}, {4, 5, 6}, {4, 5, 6}}), 1);
  EXPECT_EQ(rank_of({4, 5, 6}, {{4, 5, 6}, {}, {4, 5, 6}}), 1) << "a scalar among same shapes";
  EXPECT_EQ(rank_of({4, 5, 6}, {{4, 5, 6}, {6}, {}}), 2);
  EXPECT_EQ(rank_of({4, 5, 6}, {{4, 5, 6}, {6}, {4, 5, 1}}), 2) << "a row and a column: only the outer two axes merge";
  EXPECT_EQ(rank_of({4, 5, 6}, {{4, 5, 6}, {4, 1, 6}}), 3) << "a size-1 middle axis: nothing merges";
  EXPECT_EQ(rank_of({1, 1}, {{1}, {1, 1}}), 0);
  std::vector<int64_t> a, b;
  for (int i = 0; i < 9; ++i) {
    a.push_back(i % 2 == 0 ? 2 : 1);
    b.push_back(i % 2 == 0 ? 1 : 2);
  }
  EXPECT_FALSE(cuda::broadcast_indexing(*broadcast_sizes(a, b), {a, b, a}).has_value());
}

}  // namespace
}  // namespace weir
