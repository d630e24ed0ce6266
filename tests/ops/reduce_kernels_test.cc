// Reduce* CPU kernels against a brute-force f64 reference over every axis
// combination, keepdims, empty reductions and NaN; their gradient rules
// against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

struct Expected {
  std::vector<int64_t> sizes;
  std::vector<double> values;
};

// Groups input elements by the output they reduce into, then folds each group.
Expected reference(const std::string& op, const std::vector<double>& x, const std::vector<int64_t>& sizes,
                   std::vector<int64_t> axes, bool keepdims) {
  const auto rank = static_cast<int64_t>(sizes.size());
  std::vector<bool> reduced(sizes.size(), axes.empty());
  for (int64_t& axis : axes) reduced[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
  std::vector<int64_t> kept = sizes;
  Expected out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (reduced[i]) kept[i] = 1;
    if (!reduced[i] || keepdims) out.sizes.push_back(reduced[i] ? 1 : sizes[i]);
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(count_of(kept)));
  for (int64_t flat = 0; flat < count_of(sizes); ++flat) {
    int64_t rest = flat, slot = 0, stride = 1;
    for (size_t axis = sizes.size(); axis-- > 0;) {
      int64_t coordinate = rest % sizes[axis];
      rest /= sizes[axis];
      slot += (reduced[axis] ? 0 : coordinate) * stride;
      stride *= kept[axis];
    }
    groups[static_cast<size_t>(slot)].push_back(x[static_cast<size_t>(flat)]);
  }
  for (const std::vector<double>& group : groups) {
    double result = 0;
    if (op == "ReduceSum") for (double v : group) result += v;
    if (op == "ReduceMean") { for (double v : group) result += v; result /= static_cast<double>(group.size()); }
    if (op == "ReduceProd") { result = 1; for (double v : group) result *= v; }
    if (op == "ReduceMax") { result = -INFINITY; for (double v : group) result = std::max(result, v); }
    if (op == "ReduceMin") { result = INFINITY; for (double v : group) result = std::min(result, v); }
    if (op == "ReduceL1") for (double v : group) result += std::fabs(v);
    if (op == "ReduceSumSquare") for (double v : group) result += v * v;
    if (op == "ReduceL2") { for (double v : group) result += v * v; result = std::sqrt(result); }
    if (op == "ReduceLogSumExp") { for (double v : group) result += std::exp(v); result = std::log(result); }
    if (op == "ReduceLogSum") { for (double v : group) result += v; result = std::log(result); }
    out.values.push_back(result);
  }
  return out;
}

double tolerance(DType dtype, double magnitude) {
  switch (dtype) {
    case DType::kFloat64: return 1e-12 * std::max(1.0, magnitude);
    case DType::kFloat32: return 1e-6 * std::max(1.0, magnitude);
    case DType::kBFloat16: return std::ldexp(std::max(1.0, magnitude), -7);
    default: return 0;
  }
}

const char* const kFloatOps[] = {"ReduceSum", "ReduceMean", "ReduceProd", "ReduceMax", "ReduceMin",
                                 "ReduceL1", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp", "ReduceLogSum"};

TEST(ReduceKernels, MatchTheReferenceOnEveryAxisCombination) {
  const std::vector<int64_t> sizes = {2, 3, 4};
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {1}, {-1}, {0, 2}, {2, 0, 1}, {-3, -2}};
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kInt32, DType::kInt64}) {
    for (const char* op : kFloatOps) {
      std::string name = op;
      bool integer = is_integer(dtype);
      if (integer && (name == "ReduceL2" || name == "ReduceLogSumExp" || name == "ReduceLogSum" || name == "ReduceMean")) continue;
      for (const std::vector<int64_t>& axes : axis_sets) {
        for (int64_t keepdims : {0, 1}) {
          // Floats in [0.5, 1.5) keep products tame.
          std::vector<double> values = integer ? random_values(dtype, count_of(sizes), seed++, 0, 0)
                                               : random_values(dtype, count_of(sizes), seed++, 0.5, 1.5);
          // In [-2, 2]: a product of all 24 stays within 2^24, exact in i32.
          if (integer) for (double& v : values) v = std::fmod(v, 3.0);
          Tensor x = make_tensor(dtype, values, sizes);
          std::map<std::string, Attribute> attributes = {{"keepdims", Attribute(keepdims)}};
          if (!axes.empty()) attributes.emplace("axes", Attribute(axes));
          Tensor y = run_op(op, {x}, attributes)[0];
          Expected expected = reference(op, to_doubles(x), sizes, axes, keepdims != 0);
          ASSERT_EQ(y.sizes(), expected.sizes) << op;
          std::vector<double> got = to_doubles(y);
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], expected.values[i], tolerance(dtype, std::fabs(expected.values[i])))
                << op << " " << dtype_name(dtype) << " keepdims " << keepdims << " element " << i;
          }
        }
      }
    }
  }
}

// A global pool on channels-last data, [N, H, W, C] over H and W: the
// blocked path, whose threads split a batch of one by blocks of columns
// (C = 600: two full blocks of 256 and a ragged one) and a larger batch by rows.
TEST(ReduceKernels, GlobalPoolOverChannelsLastMatchesTheReference) {
  uint32_t seed = 90;
  for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{1, 3, 4, 600}, {3, 2, 5, 40}, {1, 7, 1, 2}}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
        Tensor x = make_tensor(dtype, random_values(dtype, count_of(sizes), seed++, -2.0, 2.0), sizes);
        const std::vector<int64_t> axes = {1, 2};
        Tensor y = run_op(op, {x}, {{"axes", Attribute(axes)}, {"keepdims", Attribute(int64_t{1})}})[0];
        Expected expected = reference(op, to_doubles(x), sizes, axes, true);
        ASSERT_EQ(y.sizes(), expected.sizes) << op;
        std::vector<double> got = to_doubles(y);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], expected.values[i], tolerance(dtype, std::fabs(expected.values[i])))
              << op << " " << dtype_name(dtype) << " " << format_sizes(sizes) << " element " << i;
        }
      }
    }
  }
}

TEST(ReduceKernels, EmptyReductionsGiveTheIdentity) {
  Tensor empty(DType::kFloat32, {3, 0, 2});
  std::map<std::string, Attribute> axis1 = {{"axes", Attribute(std::vector<int64_t>{1})}};
  EXPECT_EQ(to_doubles(run_op("ReduceSum", {empty}, axis1)[0]), std::vector<double>(6, 0.0));
  EXPECT_EQ(to_doubles(run_op("ReduceProd", {empty}, axis1)[0]), std::vector<double>(6, 1.0));
  EXPECT_EQ(to_doubles(run_op("ReduceMax", {empty}, axis1)[0]), std::vector<double>(6, -INFINITY));
  EXPECT_TRUE(std::isnan(to_doubles(run_op("ReduceMean", {empty}, axis1)[0])[0]));
  Tensor ints(DType::kInt32, {0});
  EXPECT_EQ(to_doubles(run_op("ReduceMax", {ints})[0])[0], std::numeric_limits<int32_t>::lowest());
}

TEST(ReduceKernels, NoopWithEmptyAxesAndNaN) {
  Tensor x = Tensor::from_vector<float>({1, NAN, 3, 4}, {2, 2});
  Tensor same = run_op("ReduceSum", {x}, {{"noop_with_empty_axes", Attribute(1)}})[0];
  EXPECT_EQ(same.sizes(), (std::vector<int64_t>{2, 2}));
  std::vector<double> maxima = to_doubles(run_op("ReduceMax", {x}, {{"axes", Attribute(std::vector<int64_t>{1})}})[0]);
  EXPECT_TRUE(std::isnan(maxima[0]));
  EXPECT_EQ(maxima[1], 4);
}

TEST(ReduceKernels, LogSumOfZeroNegativeAndIntegerSums) {
  Tensor x = Tensor::from_vector<double>({1, -1, -2, 1, 3, 4}, {3, 2});
  std::vector<double> got = to_doubles(run_op("ReduceLogSum", {x}, {{"axes", Attribute(std::vector<int64_t>{1})}})[0]);
  EXPECT_EQ(got[0], -INFINITY);  // log 0
  EXPECT_TRUE(std::isnan(got[1]));  // log of a negative sum
  EXPECT_DOUBLE_EQ(got[2], std::log(7.0));
  EXPECT_THROW(run_op("ReduceLogSum", {Tensor(DType::kInt32, {2, 2})}), Error);
}

TEST(ReduceKernels, BadAxesNameTheNode) {
  for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{2}, {0, -2}}) {
    try {
      run_op("ReduceSum", {Tensor(DType::kFloat32, {2, 3})}, {{"axes", Attribute(axes)}});
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.node(), "op") << e.what();
    }
  }
}

TEST(ReduceGradients, EveryDifferentiableReduction) {
  uint32_t seed = 60;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp", "ReduceLogSum", "ReduceMax",
                         "ReduceMin", "ReduceProd", "ReduceL1"}) {
    for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{}, {1}, {0, -1}}) {
      for (int64_t keepdims : {0, 1}) {
        // Distinct random values: no ties, so max/min are differentiable.
        Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, seed++, 0.5, 2.0), {2, 3, 4});
        std::map<std::string, Attribute> attributes = {{"keepdims", Attribute(keepdims)}};
        if (!axes.empty()) attributes.emplace("axes", Attribute(axes));
        check_gradient(op, {x}, {0}, attributes);
      }
    }
  }
}

TEST(ReduceGradients, ProductWithZerosAndL1WithNegatives) {
  // Sets along axis 1 with no zero, one zero and two zeros: the product is
  // linear in each element, so central differences are exact there too.
  std::vector<double> values = random_values(DType::kFloat64, 12, 70, -2.0, 2.0);
  values[4] = 0.0;
  values[8] = values[10] = 0.0;
  Tensor x = make_tensor(DType::kFloat64, values, {3, 4});
  check_gradient("ReduceProd", {x}, {0}, {{"axes", Attribute(std::vector<int64_t>{1})}});
  check_gradient("ReduceProd", {x}, {0}, {{"axes", Attribute(std::vector<int64_t>{0})}, {"keepdims", Attribute(int64_t{0})}});
  // Away from 0, where |x| has its kink.
  std::vector<double> signed_values = random_values(DType::kFloat64, 12, 71, 0.3, 2.0);
  for (size_t i = 0; i < signed_values.size(); i += 3) signed_values[i] = -signed_values[i];
  check_gradient("ReduceL1", {make_tensor(DType::kFloat64, signed_values, {3, 4})}, {0},
                 {{"axes", Attribute(std::vector<int64_t>{-1})}});
}

TEST(ReduceGradients, ProductGradientOfIntegers) {
  // dX = dY * product of the others, exactly, for i64 (no finite differences).
  Tensor x = Tensor::from_vector<int64_t>({2, 0, 3, 5, -1, 4}, {2, 3});
  Tensor dy = Tensor::from_vector<int64_t>({7, -2}, {2});
  Tensor dx = run_op("ReduceProdGrad", {dy, x}, {{"axes", Attribute(std::vector<int64_t>{1})}, {"keepdims", Attribute(int64_t{0})}})[0];
  EXPECT_EQ(to_doubles(dx), (std::vector<double>{0, 42, 0, 8, -40, 10}));
}

}  // namespace
}  // namespace weir
