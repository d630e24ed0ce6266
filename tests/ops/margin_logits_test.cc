// MarginLogits (ops/loss/margin_logits.h) against the formula written out
// on random cosines for ArcFace, CosFace, the combined margin and the plain
// scaled softmax, with labels in the shard and -1 (another rank's class);
// its gradient against central differences; bad labels refused naming the
// row.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/ops/gradient_check.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::run_op;

struct Case {
  std::string name;
  double scale, m1, m2, m3;
};

const std::vector<Case> kCases = {
    {"arcface", 64, 1, 0.5, 0},
    {"cosface", 30, 1, 0, 0.4},
    {"combined", 32, 0.9, 0.4, 0.15},
    {"softmax", 16, 1, 0, 0},
};

std::map<std::string, Attribute> attributes_of(const Case& c) {
  return {{"scale", Attribute(c.scale)}, {"m1", Attribute(c.m1)}, {"m2", Attribute(c.m2)}, {"m3", Attribute(c.m3)}};
}

// Cosines in (-0.95, 0.95), and labels: a column, or -1 for every third row.
void random_case(DType dtype, int64_t rows, int64_t columns, uint32_t seed, Tensor& cosine, Tensor& labels) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-0.95, 0.95);
  std::vector<double> values(static_cast<size_t>(rows * columns));
  for (double& v : values) v = uniform(rng);
  cosine = testing::make_tensor(dtype, values, {rows, columns});
  std::vector<int64_t> ids(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) ids[static_cast<size_t>(b)] = b % 3 == 2 ? -1 : static_cast<int64_t>(rng() % columns);
  labels = Tensor::from_vector(ids, {rows});
}

TEST(MarginLogits, MatchesTheFormulaForEveryMargin) {
  for (const Case& c : kCases) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      Tensor cosine, labels;
      random_case(dtype, 7, 13, 3, cosine, labels);
      const std::vector<double> got = testing::to_doubles(run_op("MarginLogits", {cosine, labels}, attributes_of(c))[0]);
      const std::vector<double> x = testing::to_doubles(cosine);
      for (int64_t b = 0; b < 7; ++b) {
        for (int64_t j = 0; j < 13; ++j) {
          const double cos_theta = x[static_cast<size_t>(b * 13 + j)];
          const bool target = labels.data<int64_t>()[b] == j;
          const double theta = std::acos(cos_theta);
          const double margin = c.m2 > 0 && c.m1 * theta + c.m2 > std::numbers::pi
                                    ? cos_theta - c.m3 - c.m2 * std::sin(c.m2)  // past pi: InsightFace's fallback
                                    : std::cos(c.m1 * theta + c.m2) - c.m3;
          const double want = target ? c.scale * margin : c.scale * cos_theta;
          EXPECT_NEAR(got[static_cast<size_t>(b * 13 + j)], want, (dtype == DType::kFloat32 ? 2e-6 : 1e-12) * c.scale)
              << c.name << " row " << b << " column " << j;
        }
      }
    }
  }
}

TEST(MarginLogits, GradientMatchesFiniteDifferences) {
  for (const Case& c : kCases) {
    Tensor cosine, labels;
    random_case(DType::kFloat64, 5, 9, 11, cosine, labels);
    SCOPED_TRACE(c.name);
    testing::check_gradient("MarginLogits", {cosine, labels}, {0}, attributes_of(c),
                            {.step = 1e-6, .absolute_tolerance = 1e-6, .relative_tolerance = 1e-6});
  }
}

TEST(MarginLogits, ACosineAtOneKeepsAFiniteGradient) {
  const Tensor cosine = Tensor::from_vector(std::vector<double>{1.0, 0.2, -1.0, 0.3}, {2, 2});
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, 0}, {2});
  const Tensor dy = Tensor::from_vector(std::vector<double>{1, 1, 1, 1}, {2, 2});
  const std::vector<double> grad =
      testing::to_doubles(run_op("MarginLogitsGrad", {dy, cosine, labels}, attributes_of(kCases[0]))[0]);
  for (double g : grad) EXPECT_TRUE(std::isfinite(g)) << g;
  // The plain angle (m1 = 1, m2 = 0) is linear in the cosine: exactly s there.
  const std::vector<double> cosface =
      testing::to_doubles(run_op("MarginLogitsGrad", {dy, cosine, labels}, attributes_of(kCases[1]))[0]);
  EXPECT_EQ(cosface[0], 30.0);
}

TEST(MarginLogits, PastPiTheTargetStillFallsWithTheAngle) {
  // ArcFace (m2 0.5): theta + 0.5 passes pi below a cosine of -cos(0.5) = -0.878.
  const std::vector<double> cosines = {-0.5, -0.8, -0.87, -0.89, -0.95, -0.99, -1.0};
  const Tensor cosine = Tensor::from_vector(cosines, {static_cast<int64_t>(cosines.size()), 1});
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>(cosines.size(), 0), {static_cast<int64_t>(cosines.size())});
  const std::vector<double> logits = testing::to_doubles(run_op("MarginLogits", {cosine, labels}, attributes_of(kCases[0]))[0]);
  for (size_t i = 1; i < cosines.size(); ++i) EXPECT_LT(logits[i], logits[i - 1]) << "cosine " << cosines[i];
  const Tensor dy = Tensor::from_vector(std::vector<double>(cosines.size(), 1.0), {static_cast<int64_t>(cosines.size()), 1});
  const std::vector<double> grad =
      testing::to_doubles(run_op("MarginLogitsGrad", {dy, cosine, labels}, attributes_of(kCases[0]))[0]);
  for (size_t i = 0; i < cosines.size(); ++i) EXPECT_GT(grad[i], 0) << "cosine " << cosines[i];
  EXPECT_EQ(grad.back(), 64.0);  // past pi the target is linear in the cosine
}

TEST(MarginLogits, LabelsOutsideTheShardAreRefusedNamingTheRow) {
  const Tensor cosine = Tensor::from_vector(std::vector<float>(6, 0.5f), {2, 3});
  const std::string message =
      testing::error_of("MarginLogits", {cosine, Tensor::from_vector(std::vector<int64_t>{1, 3}, {2})});
  EXPECT_NE(message.find("label 3 of row 1 is outside [-1, 3)"), std::string::npos) << message;
  EXPECT_NE(testing::error_of("MarginLogits", {cosine, Tensor::from_vector(std::vector<int64_t>{-2, 0}, {2})})
                .find("label -2 of row 0"),
            std::string::npos);
}

}  // namespace
}  // namespace weir
