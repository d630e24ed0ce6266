// PRelu (every unidirectional broadcast of slope, float and integer types),
// Hardmax (every axis, ties, NaN), LRN (odd and even windows, windows wider
// than the channels, ranks 2 to 5) and MeanVarianceNormalization (default
// and other axes) against references written with explicit coordinates;
// their gradient rules against finite differences; errors for bad shapes
// and attributes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::broadcast_offset;
using testing::check_gradient;
using testing::count_of;
using testing::error_of;
using testing::flatten;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;
using testing::unflatten;

// Relative tolerance of a result computed in `dtype` (its rounding of the output).
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return 1e-12;
    case DType::kFloat32: return 1e-6;
    case DType::kFloat16: return 2e-3;
    case DType::kBFloat16: return 1e-2;
    default: return 0;
  }
}

void expect_close(const std::vector<double>& got, const std::vector<double>& expected, DType dtype, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], tolerance(dtype) * std::max(1.0, std::fabs(expected[i]))) << what << " element " << i;
  }
}

// Values in [low, high) kept at least `gap` away from 0 (the kink of PRelu).
std::vector<double> away_from_zero(int64_t count, uint32_t seed, double gap = 0.1) {
  std::vector<double> values = random_values(DType::kFloat64, count, seed, -2.0, 2.0);
  for (double& v : values) v = v < 0 ? v - gap : v + gap;
  return values;
}

// ---------------------------------------------------------------- PRelu

TEST(PReluKernels, MatchTheReferenceForEveryBroadcastOfSlope) {
  const std::vector<int64_t> sizes = {2, 3, 4};
  const std::vector<std::vector<int64_t>> slope_shapes = {{}, {1}, {4}, {3, 1}, {1, 4}, {3, 4}, {2, 3, 4}, {2, 1, 1}, {1, 1, 1}};
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64}) {
    for (const std::vector<int64_t>& slope_sizes : slope_shapes) {
      Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), seed++), sizes);
      Tensor slope = make_tensor(dtype, random_values(dtype, count_of(slope_sizes), seed++), slope_sizes);
      Tensor y = run_op("PRelu", {x, slope})[0];
      ASSERT_EQ(y.sizes(), sizes);
      ASSERT_EQ(y.dtype(), dtype);
      std::vector<double> xs = to_doubles(x), slopes = to_doubles(slope), expected(xs.size());
      for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
        double v = xs[static_cast<size_t>(flat)];
        double s = slopes[static_cast<size_t>(broadcast_offset(flat, sizes, slope_sizes))];
        expected[static_cast<size_t>(flat)] = v < 0 ? s * v : v;
      }
      expect_close(to_doubles(y), expected, dtype, std::string(dtype_name(dtype)) + " slope " + format_sizes(slope_sizes));
    }
  }
}

TEST(PReluKernels, UnsignedInputsPassThroughAndNaNStays) {
  Tensor x = make_tensor(DType::kUInt32, {0, 7, 4000000000.0}, {3});
  EXPECT_EQ(to_doubles(run_op("PRelu", {x, make_tensor(DType::kUInt32, {5}, {1})})[0]), (std::vector<double>{0, 7, 4000000000.0}));
  Tensor nan = Tensor::from_vector<float>({std::numeric_limits<float>::quiet_NaN(), -2.0f}, {2});
  std::vector<double> got = to_doubles(run_op("PRelu", {nan, Tensor::from_vector<float>({0.5f}, {1})})[0]);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], -1.0);
}

TEST(PReluKernels, SlopeMustBroadcastUnidirectionallyToX) {
  Tensor x(DType::kFloat32, {2, 3, 4});
  // [3] is opset 6's per-channel slope; from opset 7 on it is matched with the last axis.
  for (const std::vector<int64_t>& slope_sizes : std::vector<std::vector<int64_t>>{{3}, {2, 3, 4, 1}, {1, 2, 3, 4}, {2, 3, 1, 4}}) {
    std::string message = error_of("PRelu", {x, Tensor(DType::kFloat32, slope_sizes)});
    EXPECT_NE(message.find("does not broadcast unidirectionally to X"), std::string::npos) << message;
  }
  // X [3, 4] with slope [2, 3, 4] would broadcast both ways: X must not grow.
  std::string message = error_of("PRelu", {Tensor(DType::kFloat32, {3, 4}), Tensor(DType::kFloat32, {2, 3, 4})});
  EXPECT_NE(message.find("slope"), std::string::npos) << message;
  EXPECT_THROW(run_op("PRelu", {x, Tensor(DType::kFloat64, {4})}), Error);
  EXPECT_THROW(run_op("PRelu", {Tensor(DType::kBool, {2}), Tensor(DType::kBool, {1})}), Error);
}

TEST(PReluGradients, MatchFiniteDifferencesForXAndSlope) {
  const std::vector<int64_t> sizes = {2, 3, 4};
  uint32_t seed = 30;
  for (const std::vector<int64_t>& slope_sizes : std::vector<std::vector<int64_t>>{{}, {4}, {3, 1}, {2, 3, 4}, {1, 1, 1}}) {
    Tensor x = make_tensor(DType::kFloat64, away_from_zero(count_of(sizes), seed++), sizes);
    Tensor slope = make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(slope_sizes), seed++), slope_sizes);
    check_gradient("PRelu", {x, slope}, {0, 1});
  }
}

// ---------------------------------------------------------------- Hardmax

TEST(HardmaxKernels, FirstMaximumAlongEveryAxis) {
  const std::vector<int64_t> sizes = {3, 4, 5};
  uint32_t seed = 40;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    // Few distinct values: most lines have tied maxima.
    std::vector<double> values = random_values(DType::kFloat64, count_of(sizes), seed++, 0.0, 3.0);
    for (double& v : values) v = std::floor(v) - 1.0;
    Tensor x = make_tensor(dtype, values, sizes);
    for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
      std::map<std::string, Attribute> attributes;
      if (axis != -1) attributes.emplace("axis", Attribute(axis));
      Tensor y = run_op("Hardmax", {x}, attributes)[0];
      ASSERT_EQ(y.sizes(), sizes);
      const auto a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      std::vector<double> got = to_doubles(y);
      for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
        std::vector<int64_t> index = unflatten(flat, sizes);
        // The first position along the axis holding this line's maximum.
        int64_t first = 0;
        for (int64_t j = 0; j < sizes[a]; ++j) {
          std::vector<int64_t> at = index, best = index;
          at[a] = j;
          best[a] = first;
          if (values[static_cast<size_t>(flatten(at, sizes))] > values[static_cast<size_t>(flatten(best, sizes))]) first = j;
        }
        ASSERT_EQ(got[static_cast<size_t>(flat)], index[a] == first ? 1.0 : 0.0)
            << dtype_name(dtype) << " axis " << axis << " element " << flat;
      }
    }
  }
}

TEST(HardmaxKernels, NaNWinsAndEmptyLinesStayEmpty) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({1, nan, 5, nan, 2, 3, 3, 1}, {2, 4});
  EXPECT_EQ(to_doubles(run_op("Hardmax", {x})[0]), (std::vector<double>{0, 1, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(run_op("Hardmax", {Tensor(DType::kFloat32, {2, 0})})[0].sizes(), (std::vector<int64_t>{2, 0}));
}

TEST(HardmaxKernels, BadAxisAndTypeFail) {
  Tensor x(DType::kFloat32, {2, 3});
  std::string message = error_of("Hardmax", {x}, {{"axis", Attribute(int64_t{2})}});
  EXPECT_NE(message.find("axis 2"), std::string::npos) << message;
  EXPECT_THROW(run_op("Hardmax", {x}, {{"axis", Attribute(int64_t{-3})}}), Error);
  EXPECT_THROW(run_op("Hardmax", {Tensor(DType::kFloat32, {})}), Error);
  EXPECT_THROW(run_op("Hardmax", {Tensor(DType::kInt32, {2, 3})}), Error);
}

TEST(HardmaxGradients, TheRuleGivesNoGradient) {
  check_gradient("Hardmax", {make_tensor(DType::kFloat64, random_values(DType::kFloat64, 6, 50), {2, 3})}, {});
}

// ---------------------------------------------------------------- LRN

struct LrnAttributes {
  int64_t size;
  double alpha = 0.0001, beta = 0.75, bias = 1.0;
};

// ONNX's formula, element by element.
std::vector<double> lrn_reference(const std::vector<double>& x, const std::vector<int64_t>& sizes, const LrnAttributes& a) {
  std::vector<double> y(x.size());
  const int64_t channels = sizes[1];
  for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
    std::vector<int64_t> index = unflatten(flat, sizes);
    const int64_t c = index[1];
    const int64_t low = std::max<int64_t>(0, c - (a.size - 1) / 2);
    const int64_t high = std::min<int64_t>(channels - 1, c + (a.size - 1 + 1) / 2);  // ceil((size - 1) / 2)
    double square_sum = 0;
    for (int64_t i = low; i <= high; ++i) {
      std::vector<int64_t> at = index;
      at[1] = i;
      double v = x[static_cast<size_t>(flatten(at, sizes))];
      square_sum += v * v;
    }
    y[static_cast<size_t>(flat)] =
        x[static_cast<size_t>(flat)] / std::pow(a.bias + a.alpha / static_cast<double>(a.size) * square_sum, a.beta);
  }
  return y;
}

std::map<std::string, Attribute> lrn_attributes(const LrnAttributes& a) {
  return {{"size", Attribute(a.size)}, {"alpha", Attribute(a.alpha)}, {"beta", Attribute(a.beta)}, {"bias", Attribute(a.bias)}};
}

TEST(LrnKernels, MatchTheReference) {
  uint32_t seed = 60;
  const std::vector<LrnAttributes> settings = {{3}, {4, 0.5, 0.6, 2.0}, {1, 1.0, 1.0, 0.5}, {9, 0.3, 0.75, 1.0}, {2, 2.0, 0.5, 1.5}};
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{2, 5, 3, 2}, {3, 4}, {1, 6, 2, 2, 2}, {2, 3, 7}}) {
      for (const LrnAttributes& a : settings) {
        Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), seed++), sizes);
        Tensor y = run_op("LRN", {x}, lrn_attributes(a))[0];
        ASSERT_EQ(y.sizes(), sizes);
        expect_close(to_doubles(y), lrn_reference(to_doubles(x), sizes, a), dtype,
                     std::string(dtype_name(dtype)) + " " + format_sizes(sizes) + " size " + std::to_string(a.size));
      }
    }
  }
  // ONNX's defaults for alpha, beta and bias.
  Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 40, 70, -20.0, 20.0), {2, 5, 4});
  expect_close(to_doubles(run_op("LRN", {x}, {{"size", Attribute(int64_t{3})}})[0]),
               lrn_reference(to_doubles(x), {2, 5, 4}, {3}), DType::kFloat64, "defaults");
}

TEST(LrnKernels, BadShapesAndAttributesFail) {
  std::string message = error_of("LRN", {Tensor(DType::kFloat32, {5})}, {{"size", Attribute(int64_t{3})}});
  EXPECT_NE(message.find("needs at least 2 axes"), std::string::npos) << message;
  message = error_of("LRN", {Tensor(DType::kFloat32, {1, 5, 2})}, {{"size", Attribute(int64_t{0})}});
  EXPECT_NE(message.find("size must be at least 1"), std::string::npos) << message;
  EXPECT_THROW(run_op("LRN", {Tensor(DType::kFloat32, {1, 5, 2})}), Error);  // size is required
  EXPECT_THROW(run_op("LRN", {Tensor(DType::kInt32, {1, 5, 2})}, {{"size", Attribute(int64_t{3})}}), Error);
}

TEST(LrnGradients, MatchFiniteDifferences) {
  uint32_t seed = 80;
  for (const LrnAttributes& a : std::vector<LrnAttributes>{{3}, {2, 0.8, 0.75, 1.0}, {5, 1.5, 0.6, 2.0}, {1, 1.0, 1.2, 0.7}}) {
    const std::vector<int64_t> sizes = {2, 4, 3};
    Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(sizes), seed++, -2.0, 2.0), sizes);
    check_gradient("LRN", {x}, {0}, lrn_attributes(a));
  }
}

// ---------------------------------------------------------------- MeanVarianceNormalization

// Groups elements by their coordinates on the axes not normalized over.
std::vector<double> mvn_reference(const std::vector<double>& x, const std::vector<int64_t>& sizes, std::vector<int64_t> axes) {
  const auto rank = static_cast<int64_t>(sizes.size());
  std::vector<bool> reduced(sizes.size(), false);
  for (int64_t axis : axes) reduced[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
  auto key = [&](int64_t flat) {
    std::vector<int64_t> index = unflatten(flat, sizes);
    for (size_t a = 0; a < index.size(); ++a) {
      if (reduced[a]) index[a] = 0;
    }
    return index;
  };
  std::vector<double> y(x.size());
  for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
    double sum = 0, squares = 0, n = 0;
    for (int64_t other = 0; other < count_of(sizes); ++other) {
      if (key(other) != key(flat)) continue;
      sum += x[static_cast<size_t>(other)];
      n += 1;
    }
    double mean = sum / n;
    for (int64_t other = 0; other < count_of(sizes); ++other) {
      if (key(other) == key(flat)) squares += (x[static_cast<size_t>(other)] - mean) * (x[static_cast<size_t>(other)] - mean);
    }
    y[static_cast<size_t>(flat)] = (x[static_cast<size_t>(flat)] - mean) / (std::sqrt(squares / n) + 1e-9);
  }
  return y;
}

TEST(MeanVarianceNormalizationKernels, MatchTheReference) {
  uint32_t seed = 90;
  const std::vector<int64_t> sizes = {2, 3, 4, 2};
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{0, 2, 3}, {1}, {-1}, {0, 1, 2, 3}, {3, 2}, {0}}) {
      Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), seed++, -4.0, 6.0), sizes);
      std::map<std::string, Attribute> attributes;
      if (axes != std::vector<int64_t>{0, 2, 3}) attributes.emplace("axes", Attribute(axes));  // else the default
      Tensor y = run_op("MeanVarianceNormalization", {x}, attributes)[0];
      ASSERT_EQ(y.sizes(), sizes);
      expect_close(to_doubles(y), mvn_reference(to_doubles(x), sizes, axes), dtype,
                   std::string(dtype_name(dtype)) + " axes " + format_sizes(axes));
    }
  }
  // A constant group: zero deviation, zero output (not NaN).
  Tensor constant = make_tensor(DType::kFloat32, std::vector<double>(6, 2.5), {1, 1, 2, 3});
  EXPECT_EQ(to_doubles(run_op("MeanVarianceNormalization", {constant})[0]), std::vector<double>(6, 0.0));
}

TEST(MeanVarianceNormalizationKernels, BadAxesFail) {
  // The default axes [0, 2, 3] need rank 4.
  std::string message = error_of("MeanVarianceNormalization", {Tensor(DType::kFloat32, {2, 3})});
  EXPECT_NE(message.find("axis 2 is out of range for rank 2"), std::string::npos) << message;
  message = error_of("MeanVarianceNormalization", {Tensor(DType::kFloat32, {2, 3})},
                     {{"axes", Attribute(std::vector<int64_t>{1, -1})}});
  EXPECT_NE(message.find("listed twice"), std::string::npos) << message;
  EXPECT_THROW(run_op("MeanVarianceNormalization", {Tensor(DType::kInt64, {2, 3, 1, 1})}), Error);
}

TEST(MeanVarianceNormalizationGradients, MatchFiniteDifferences) {
  uint32_t seed = 100;
  for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{0, 2, 3}, {1}, {0, 1, 2, 3}}) {
    const std::vector<int64_t> sizes = {2, 3, 2, 2};
    Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(sizes), seed++), sizes);
    std::map<std::string, Attribute> attributes;
    if (axes != std::vector<int64_t>{0, 2, 3}) attributes.emplace("axes", Attribute(axes));
    check_gradient("MeanVarianceNormalization", {x}, {0}, attributes);
  }
}

}  // namespace
}  // namespace weir
