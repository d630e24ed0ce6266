// Softmax and LogSoftmax CPU kernels against an f64 reference (every axis,
// size-1 and zero-size axes, huge magnitudes), and their gradient rules
// against finite differences.
#include <gtest/gtest.h>

#include <cmath>

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

std::vector<double> reference(const std::vector<double>& x, const std::vector<int64_t>& sizes, int64_t axis, bool log) {
  auto rank = static_cast<int64_t>(sizes.size());
  if (axis < 0) axis += rank;
  int64_t outer = 1, n = sizes[static_cast<size_t>(axis)], inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= sizes[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= sizes[static_cast<size_t>(i)];
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * n + j) * inner + i); };
      double max = -INFINITY;
      for (int64_t j = 0; j < n; ++j) max = std::max(max, x[at(j)]);
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(x[at(j)] - max);
      for (int64_t j = 0; j < n; ++j) y[at(j)] = log ? x[at(j)] - max - std::log(sum) : std::exp(x[at(j)] - max) / sum;
    }
  }
  return y;
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return 1e-14;
    case DType::kFloat32: return 2e-6;
    case DType::kFloat16: return 2e-3;
    default: return 1.6e-2;  // bf16: 8 significant bits
  }
}

TEST(SoftmaxKernels, MatchTheReferenceOnEveryAxisAndDtype) {
  struct Case {
    std::vector<int64_t> sizes;
    int64_t axis;
  };
  const std::vector<Case> cases = {{{3, 5}, -1}, {{3, 5}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, -3}, {{1}, 0}, {{0, 4}, 1}, {{4, 1}, 1}};
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : cases) {
      for (bool log : {false, true}) {
        Tensor x = make_tensor(dtype, random_values(dtype, count_of(c.sizes), seed++, -4, 4), c.sizes);
        Tensor y = run_op(log ? "LogSoftmax" : "Softmax", {x}, {{"axis", Attribute(c.axis)}})[0];
        std::vector<double> expected = reference(to_doubles(x), c.sizes, c.axis, log);
        std::vector<double> got = to_doubles(y);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], expected[i], tolerance(dtype) * std::max(1.0, std::fabs(expected[i])))
              << (log ? "LogSoftmax " : "Softmax ") << dtype_name(dtype) << " axis " << c.axis;
        }
      }
    }
  }
}

TEST(SoftmaxKernels, HugeMagnitudesStayFinite) {
  Tensor x = Tensor::from_vector<float>({1000.0f, -1000.0f, 999.0f, 0.0f}, {1, 4});
  std::vector<double> y = to_doubles(run_op("Softmax", {x})[0]);
  std::vector<double> log_y = to_doubles(run_op("LogSoftmax", {x})[0]);
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_TRUE(std::isfinite(y[i]));
    EXPECT_FALSE(std::isnan(log_y[i]));
  }
  EXPECT_NEAR(y[0], 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(log_y[1], -2000 - std::log1p(std::exp(-1.0)), 1e-2);
}

TEST(SoftmaxKernels, BadAxisNamesTheNode) {
  try {
    run_op("Softmax", {Tensor(DType::kFloat32, {2, 3})}, {{"axis", Attribute(2)}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), "op");
    EXPECT_NE(std::string(e.what()).find("axis 2 is out of range for rank 2"), std::string::npos) << e.what();
  }
}

TEST(SoftmaxGradients, SoftmaxAndLogSoftmaxOnEveryAxis) {
  uint32_t seed = 40;
  for (int64_t axis : {-1, 0, 1}) {
    Tensor x = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 24, seed++, -3, 3), {2, 3, 4});
    check_gradient("Softmax", {x}, {0}, {{"axis", Attribute(axis)}});
    check_gradient("LogSoftmax", {x}, {0}, {{"axis", Attribute(axis)}});
  }
}

}  // namespace
}  // namespace weir
