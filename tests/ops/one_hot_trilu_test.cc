// OneHot (every axis, negative and out-of-range indices, float indices) and
// Trilu (upper and lower, every k, batches, non-square) against references
// written with explicit coordinates; Trilu's gradient against finite differences.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

TEST(OneHotKernels, EveryAxisAndIndexKind) {
  const std::vector<double> indices = {0, -1, 4, 2, -5, 7};  // 7 is out of range for depth 5
  const std::vector<int64_t> index_sizes = {2, 3};
  const int64_t depth = 5;
  Tensor values = make_tensor(DType::kFloat32, {-0.5, 3}, {2});
  for (DType index_type : {DType::kInt64, DType::kFloat32, DType::kInt32}) {
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      Tensor y = run_op("OneHot", {make_tensor(index_type, indices, index_sizes), Tensor::scalar<int64_t>(depth), values},
                        {{"axis", Attribute(axis)}})[0];
      std::vector<int64_t> sizes = index_sizes;
      sizes.insert(sizes.begin() + a, depth);
      ASSERT_EQ(y.sizes(), sizes);
      std::vector<double> got = to_doubles(y);
      for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
        int64_t rest = flat;
        std::vector<int64_t> coordinate(3);
        for (size_t i = 3; i-- > 0;) {
          coordinate[i] = rest % sizes[i];
          rest /= sizes[i];
        }
        int64_t d = coordinate[static_cast<size_t>(a)];
        coordinate.erase(coordinate.begin() + a);
        auto index = static_cast<int64_t>(indices[static_cast<size_t>(coordinate[0] * 3 + coordinate[1])]);
        bool on = index == d || index + depth == d;
        ASSERT_EQ(got[static_cast<size_t>(flat)], on ? 3 : -0.5) << "axis " << axis;
      }
    }
  }
  EXPECT_THROW(run_op("OneHot", {make_tensor(DType::kInt64, {0}, {1}), Tensor::scalar<int64_t>(0), values}), Error);
  EXPECT_THROW(run_op("OneHot", {make_tensor(DType::kInt64, {0}, {1}), Tensor::scalar<int64_t>(2),
                                 make_tensor(DType::kFloat32, {0, 1, 2}, {3})}), Error);
}

TEST(TriluKernels, UpperAndLowerForEveryK) {
  const std::vector<int64_t> sizes = {2, 3, 5};
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kBool}) {
    Tensor x = make_tensor(dtype, random_values(dtype, 30, 5), sizes);
    std::vector<double> values = to_doubles(x);
    for (int64_t upper : {0, 1}) {
      for (int64_t k : {-4, -1, 0, 2, 6}) {
        std::vector<double> got = to_doubles(run_op("Trilu", {x, Tensor::scalar<int64_t>(k)}, {{"upper", Attribute(upper)}})[0]);
        for (int64_t flat = 0; flat < 30; ++flat) {
          int64_t column = flat % 5, row = (flat / 5) % 3;
          bool kept = upper ? column - row >= k : column - row <= k;
          ASSERT_EQ(got[static_cast<size_t>(flat)], kept ? values[static_cast<size_t>(flat)] : 0.0) << upper << " k " << k;
        }
      }
    }
  }
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 9, 6), {3, 3});
  std::vector<double> v = to_doubles(x);
  EXPECT_EQ(to_doubles(run_op("Trilu", {x})[0]), (std::vector<double>{v[0], v[1], v[2], 0, v[4], v[5], 0, 0, v[8]}));
  EXPECT_THROW(run_op("Trilu", {make_tensor(DType::kFloat32, {1, 2}, {2})}), Error);
}

TEST(TriluGradients, MatchFiniteDifferences) {
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, 7), {2, 3, 4});
  check_gradient("Trilu", {x, Tensor::scalar<int64_t>(1)}, {0});
  check_gradient("Trilu", {x, Tensor::scalar<int64_t>(-1)}, {0}, {{"upper", Attribute(int64_t{0})}});
}

}  // namespace
}  // namespace weir
