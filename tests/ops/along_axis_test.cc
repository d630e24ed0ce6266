// ArgMax, ArgMin, CumSum and TopK against references written with explicit
// coordinates on random inputs (every axis, negative axes, ties, NaN, empty
// axes), and the CumSum and TopK gradient rules against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::make_tensor;
using testing::random_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

// Offsets of the line (outer o, inner i) along `axis` of `sizes`.
std::vector<int64_t> line(const std::vector<int64_t>& sizes, size_t axis, int64_t o, int64_t i) {
  int64_t inner = 1;
  for (size_t a = axis + 1; a < sizes.size(); ++a) inner *= sizes[a];
  std::vector<int64_t> offsets;
  for (int64_t j = 0; j < sizes[axis]; ++j) offsets.push_back((o * sizes[axis] + j) * inner + i);
  return offsets;
}

int64_t outer_of(const std::vector<int64_t>& sizes, size_t axis) {
  int64_t outer = 1;
  for (size_t a = 0; a < axis; ++a) outer *= sizes[a];
  return outer;
}

int64_t inner_of(const std::vector<int64_t>& sizes, size_t axis) {
  int64_t inner = 1;
  for (size_t a = axis + 1; a < sizes.size(); ++a) inner *= sizes[a];
  return inner;
}

TEST(AlongAxisKernels, ArgMaxArgMinOnEveryAxisWithTies) {
  const std::vector<int64_t> sizes = {3, 4, 5};
  for (DType dtype : {DType::kFloat32, DType::kInt32, DType::kBFloat16, DType::kFloat64}) {
    // Few distinct values, so ties are common.
    std::vector<double> values = random_values(DType::kInt32, 60, 3);
    for (double& v : values) v = std::fmod(std::fabs(v), 4.0);
    Tensor x = make_tensor(dtype, values, sizes);
    for (int64_t axis : {0, 1, 2, -1}) {
      auto a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      for (int64_t last : {0, 1}) {
        for (const char* op : {"ArgMax", "ArgMin"}) {
          bool max = std::string(op) == "ArgMax";
          Tensor y = run_op(op, {x}, {{"axis", Attribute(axis)}, {"keepdims", Attribute(int64_t{0})},
                                      {"select_last_index", Attribute(last)}})[0];
          std::vector<int64_t> expected_sizes = sizes;
          expected_sizes.erase(expected_sizes.begin() + static_cast<int64_t>(a));
          ASSERT_EQ(y.sizes(), expected_sizes);
          ASSERT_EQ(y.dtype(), DType::kInt64);
          std::vector<double> got = to_doubles(y);
          for (int64_t o = 0; o < outer_of(sizes, a); ++o) {
            for (int64_t i = 0; i < inner_of(sizes, a); ++i) {
              std::vector<int64_t> offsets = line(sizes, a, o, i);
              int64_t best = 0;
              for (int64_t j = 1; j < static_cast<int64_t>(offsets.size()); ++j) {
                double v = values[static_cast<size_t>(offsets[static_cast<size_t>(j)])];
                double b = values[static_cast<size_t>(offsets[static_cast<size_t>(best)])];
                if ((max ? v > b : v < b) || (last && v == b)) best = j;
              }
              ASSERT_EQ(got[static_cast<size_t>(o * inner_of(sizes, a) + i)], best) << op << " axis " << axis;
            }
          }
        }
      }
    }
  }
}

TEST(AlongAxisKernels, ArgExtremaPickNaNAndKeepDims) {
  const double nan = std::nan("");
  Tensor x = make_tensor(DType::kFloat32, {1, nan, 3, -1, 5, 2}, {2, 3});
  EXPECT_EQ(to_doubles(run_op("ArgMax", {x}, {{"axis", Attribute(int64_t{1})}})[0]), (std::vector<double>{1, 1}));
  EXPECT_EQ(to_doubles(run_op("ArgMin", {x}, {{"axis", Attribute(int64_t{1})}})[0]), (std::vector<double>{1, 0}));
  EXPECT_EQ(run_op("ArgMax", {x})[0].sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_THROW(run_op("ArgMax", {make_tensor(DType::kFloat32, {}, {2, 0})}, {{"axis", Attribute(int64_t{1})}}), Error);
  EXPECT_THROW(run_op("ArgMax", {x}, {{"axis", Attribute(int64_t{2})}}), Error);
}

TEST(AlongAxisKernels, CumSumEveryModeAndAxis) {
  const std::vector<int64_t> sizes = {2, 3, 4};
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32}) {
    Tensor x = random_tensor(dtype, sizes, 7);
    std::vector<double> values = to_doubles(x);
    for (int64_t axis : {0, 1, -1}) {
      auto a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      for (int64_t exclusive : {0, 1}) {
        for (int64_t reverse : {0, 1}) {
          Tensor axis_tensor = dtype == DType::kInt32 ? Tensor::scalar<int32_t>(static_cast<int32_t>(axis)) : Tensor::scalar<int64_t>(axis);
          std::vector<double> got = to_doubles(
              run_op("CumSum", {x, axis_tensor}, {{"exclusive", Attribute(exclusive)}, {"reverse", Attribute(reverse)}})[0]);
          for (int64_t o = 0; o < outer_of(sizes, a); ++o) {
            for (int64_t i = 0; i < inner_of(sizes, a); ++i) {
              std::vector<int64_t> offsets = line(sizes, a, o, i);
              if (reverse) std::reverse(offsets.begin(), offsets.end());
              double sum = 0;
              for (int64_t offset : offsets) {
                double v = values[static_cast<size_t>(offset)];
                double expected = exclusive ? sum : sum + v;
                ASSERT_NEAR(got[static_cast<size_t>(offset)], expected, 1e-4 * (1 + std::fabs(expected)))
                    << dtype_name(dtype) << " axis " << axis << " exclusive " << exclusive << " reverse " << reverse;
                sum += v;
              }
            }
          }
        }
      }
    }
  }
}

TEST(AlongAxisKernels, TopKLargestAndSmallestWithTies) {
  const std::vector<int64_t> sizes = {3, 6, 2};
  std::vector<double> values = random_values(DType::kInt32, 36, 9);
  for (double& v : values) v = std::fmod(v, 5.0);  // ties
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kFloat16}) {
    Tensor x = make_tensor(dtype, values, sizes);
    for (int64_t axis : {1, -3}) {
      auto a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      for (int64_t largest : {0, 1}) {
        int64_t k = 2;
        std::vector<Tensor> out = run_op("TopK", {x, Tensor::from_vector<int64_t>({k}, {1})},
                                         {{"axis", Attribute(axis)}, {"largest", Attribute(largest)}}, 2);
        std::vector<int64_t> expected_sizes = sizes;
        expected_sizes[a] = k;
        ASSERT_EQ(out[0].sizes(), expected_sizes);
        std::vector<double> got_values = to_doubles(out[0]), got_indices = to_doubles(out[1]);
        for (int64_t o = 0; o < outer_of(sizes, a); ++o) {
          for (int64_t i = 0; i < inner_of(sizes, a); ++i) {
            std::vector<int64_t> offsets = line(sizes, a, o, i);
            std::vector<int64_t> order(offsets.size());
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
              double vp = values[static_cast<size_t>(offsets[static_cast<size_t>(p)])];
              double vq = values[static_cast<size_t>(offsets[static_cast<size_t>(q)])];
              return largest ? vp > vq : vp < vq;
            });
            for (int64_t j = 0; j < k; ++j) {
              auto slot = static_cast<size_t>((o * k + j) * inner_of(sizes, a) + i);
              ASSERT_EQ(got_indices[slot], order[static_cast<size_t>(j)]) << "largest " << largest;
              ASSERT_EQ(got_values[slot], values[static_cast<size_t>(offsets[static_cast<size_t>(order[static_cast<size_t>(j)])])]);
            }
          }
        }
      }
    }
  }
  Tensor x = random_tensor(DType::kFloat32, {4}, 1);
  EXPECT_THROW(run_op("TopK", {x, Tensor::from_vector<int64_t>({5}, {1})}, {}, 2), Error);
  EXPECT_EQ(run_op("TopK", {x, Tensor::from_vector<int64_t>({0}, {1})}, {}, 2)[0].num_elements(), 0);
}

TEST(AlongAxisGradients, CumSumAndTopKMatchFiniteDifferences) {
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, 11), {2, 3, 4});
  for (int64_t exclusive : {0, 1}) {
    for (int64_t reverse : {0, 1}) {
      check_gradient("CumSum", {x, Tensor::scalar<int64_t>(-2)}, {0},
                     {{"exclusive", Attribute(exclusive)}, {"reverse", Attribute(reverse)}});
    }
  }
  // Distinct random values: the chosen set does not change under a small step.
  check_gradient("TopK", {x, Tensor::from_vector<int64_t>({2}, {1})}, {0}, {{"axis", Attribute(int64_t{1})}},
                 {.num_outputs = 2});
  check_gradient("TopK", {x, Tensor::from_vector<int64_t>({3}, {1})}, {0}, {{"largest", Attribute(int64_t{0})}},
                 {.num_outputs = 2});
}

}  // namespace
}  // namespace weir
