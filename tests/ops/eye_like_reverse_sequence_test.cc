// EyeLike (every k, input and output dtypes, empty and non-square shapes)
// and ReverseSequence (both axis orders, trailing axes, every length from 0
// to the time size) against references written with explicit coordinates;
// ReverseSequence's gradient against finite differences; malformed inputs.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::error_of;
using testing::flatten;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;
using testing::unflatten;

TEST(EyeLikeKernels, EveryDiagonalAndDtype) {
  for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{4, 5}, {5, 3}, {3, 3}, {0, 2}, {1, 1}}) {
    for (DType in : {DType::kInt32, DType::kFloat32, DType::kBool}) {
      Tensor x = make_tensor(in, random_values(in, count_of(sizes), 3), sizes);
      for (std::optional<DType> out : {std::optional<DType>(), std::optional<DType>(DType::kFloat64),
                                       std::optional<DType>(DType::kInt8), std::optional<DType>(DType::kBool),
                                       std::optional<DType>(DType::kBFloat16)}) {
        for (int64_t k : {-6, -2, -1, 0, 1, 3, 6}) {
          std::map<std::string, Attribute> attributes = {{"k", Attribute(k)}};
          if (out) attributes["dtype"] = Attribute(static_cast<int64_t>(*out));
          Tensor y = run_op("EyeLike", {x}, attributes)[0];
          ASSERT_EQ(y.dtype(), out ? *out : in);
          ASSERT_EQ(y.sizes(), sizes);
          std::vector<double> got = to_doubles(y);
          for (int64_t r = 0; r < sizes[0]; ++r) {
            for (int64_t c = 0; c < sizes[1]; ++c) {
              ASSERT_EQ(got[static_cast<size_t>(r * sizes[1] + c)], c - r == k ? 1.0 : 0.0)
                  << "k " << k << " at " << r << "," << c;
            }
          }
        }
      }
    }
  }
}

TEST(EyeLikeKernels, RejectsOtherRanksAndUnknownDtypes) {
  EXPECT_NE(error_of("EyeLike", {Tensor(DType::kFloat32, {2, 2, 2})}).find("input [2,2,2] must be 2-D"), std::string::npos);
  EXPECT_NE(error_of("EyeLike", {Tensor(DType::kFloat32, {3})}).find("must be 2-D"), std::string::npos);
  EXPECT_NE(error_of("EyeLike", {Tensor(DType::kFloat32, {2, 2})}, {{"dtype", Attribute(int64_t{8})}})
                .find("dtype 8 is not a dtype Weir supports"),
            std::string::npos);
}

// y[b, t] = x[b, len_b - 1 - t] for t < len_b, else x[b, t], with (b, t) on the given axes.
std::vector<double> reverse_reference(const std::vector<double>& x, const std::vector<int64_t>& sizes,
                                      const std::vector<int64_t>& lens, int64_t batch_axis, int64_t time_axis) {
  std::vector<double> y(x.size());
  for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
    std::vector<int64_t> index = unflatten(flat, sizes);
    int64_t len = lens[static_cast<size_t>(index[static_cast<size_t>(batch_axis)])];
    int64_t& t = index[static_cast<size_t>(time_axis)];
    if (t < len) t = len - 1 - t;
    y[static_cast<size_t>(flat)] = x[static_cast<size_t>(flatten(index, sizes))];
  }
  return y;
}

Tensor lengths(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())});
}

TEST(ReverseSequenceKernels, BothAxisOrdersAndEveryLength) {
  for (DType dtype : {DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBool}) {
    for (auto [batch_axis, time_axis] : {std::pair<int64_t, int64_t>{1, 0}, {0, 1}}) {
      for (const std::vector<int64_t>& rest : std::vector<std::vector<int64_t>>{{}, {3}, {2, 2}}) {
        std::vector<int64_t> sizes(2);
        const int64_t batch = 6, time = 5;
        sizes[static_cast<size_t>(batch_axis)] = batch;
        sizes[static_cast<size_t>(time_axis)] = time;
        sizes.insert(sizes.end(), rest.begin(), rest.end());
        Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), 9), sizes);
        std::vector<int64_t> lens = {0, 1, 5, 3, 2, 4};
        std::vector<double> got = to_doubles(run_op("ReverseSequence", {x, lengths(lens)},
                                                    {{"batch_axis", Attribute(batch_axis)}, {"time_axis", Attribute(time_axis)}})[0]);
        EXPECT_EQ(got, reverse_reference(to_doubles(x), sizes, lens, batch_axis, time_axis))
            << dtype_name(dtype) << " batch_axis " << batch_axis << " trailing " << rest.size();
      }
    }
  }
  // The defaults: batch_axis 1, time_axis 0.
  Tensor x = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 12, 2), {4, 3});
  EXPECT_EQ(to_doubles(run_op("ReverseSequence", {x, lengths({4, 2, 1})})[0]),
            reverse_reference(to_doubles(x), {4, 3}, {4, 2, 1}, 1, 0));
}

TEST(ReverseSequenceKernels, RejectsBadLengthsAndAxes) {
  Tensor x(DType::kFloat32, {4, 3});
  EXPECT_NE(error_of("ReverseSequence", {x, lengths({5, 1, 1})}).find("sequence length 5 is outside [0, 4]"), std::string::npos);
  EXPECT_NE(error_of("ReverseSequence", {x, lengths({-1, 1, 1})}).find("outside"), std::string::npos);
  EXPECT_NE(error_of("ReverseSequence", {x, lengths({1, 1})}).find("sequence_lens [2] must be [3], the batch size"),
            std::string::npos);
  EXPECT_NE(error_of("ReverseSequence", {x, lengths({1, 1, 1})}, {{"batch_axis", Attribute(int64_t{0})}})
                .find("batch_axis 0 and time_axis 0 must be 0 and 1"),
            std::string::npos);
  EXPECT_NE(error_of("ReverseSequence", {x, lengths({1, 1, 1})}, {{"time_axis", Attribute(int64_t{2})}}).find("time_axis 2"),
            std::string::npos);
  EXPECT_NE(error_of("ReverseSequence", {Tensor(DType::kFloat32, {4}), lengths({1})}).find("needs at least 2 axes"),
            std::string::npos);
}

TEST(ReverseSequenceGradients, MatchFiniteDifferences) {
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, 4), {4, 3, 2});
  check_gradient("ReverseSequence", {x, lengths({4, 0, 2})}, {0});
  check_gradient("ReverseSequence", {make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, 5), {3, 4, 2}),
                                     lengths({3, 1, 4})},
                 {0}, {{"batch_axis", Attribute(int64_t{0})}, {"time_axis", Attribute(int64_t{1})}});
}

}  // namespace
}  // namespace weir
