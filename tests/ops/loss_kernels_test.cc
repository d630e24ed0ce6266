// Loss kernels against an f64 reference (class weights, ignore_index, every
// reduction, [N, C] and [N, C, D] layouts) and their gradient rules against
// finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

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

Tensor random_labels(const std::vector<int64_t>& sizes, int64_t classes, uint32_t seed, int64_t ignored = -100) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int64_t> pick(0, classes - 1);
  std::vector<int64_t> labels(static_cast<size_t>(count_of(sizes)));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = i % 4 == 3 ? ignored : pick(engine);
  return Tensor::from_vector<int64_t>(labels, sizes);
}

// Reference: per position -w[label] * logp[label]; logp from log-softmax when
// `softmax`, else the scores themselves.
std::vector<double> reference(const std::vector<double>& scores, const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& labels, const std::vector<double>& weights, int64_t ignore,
                              const std::string& reduction, bool softmax) {
  int64_t n = sizes[0], c = sizes[1], inner = count_of(sizes) / (n * c);
  std::vector<double> losses;
  double total_weight = 0;
  for (int64_t p = 0; p < n * inner; ++p) {
    auto at = [&](int64_t cls) { return static_cast<size_t>((p / inner * c + cls) * inner + p % inner); };
    int64_t label = labels[static_cast<size_t>(p)];
    if (label == ignore) {
      losses.push_back(0);
      continue;
    }
    double log_sum = 0;
    if (softmax) {
      double sum = 0;
      for (int64_t k = 0; k < c; ++k) sum += std::exp(scores[at(k)]);
      log_sum = std::log(sum);
    }
    double w = weights.empty() ? 1 : weights[static_cast<size_t>(label)];
    total_weight += w;
    losses.push_back(-w * (scores[at(label)] - log_sum));
  }
  if (reduction == "none") return losses;
  double sum = 0;
  for (double loss : losses) sum += loss;
  return {reduction == "sum" ? sum : sum / total_weight};
}

TEST(LossKernels, CrossEntropyAndNllMatchTheReference) {
  uint32_t seed = 1;
  for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{6, 5}, {3, 4, 2}}) {
    for (const char* op : {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}) {
      for (const char* reduction : {"none", "sum", "mean"}) {
        for (bool weighted : {false, true}) {
          for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
            std::vector<int64_t> label_sizes = sizes;
            label_sizes.erase(label_sizes.begin() + 1);
            Tensor scores = make_tensor(dtype, random_values(dtype, count_of(sizes), seed++, -3, 3), sizes);
            Tensor labels = random_labels(label_sizes, sizes[1], seed++, -1);
            std::vector<double> weights = weighted ? random_values(DType::kFloat64, sizes[1], seed++, 0.5, 2) : std::vector<double>();
            std::vector<Tensor> inputs = {scores, labels};
            if (weighted) inputs.push_back(make_tensor(dtype, weights, {sizes[1]}));
            Tensor loss = run_op(op, inputs, {{"reduction", Attribute(reduction)}, {"ignore_index", Attribute(-1)}})[0];
            std::vector<double> expected = reference(to_doubles(scores), sizes, std::vector<int64_t>(labels.data<int64_t>(), labels.data<int64_t>() + labels.num_elements()),
                                                     weighted ? to_doubles(inputs[2]) : std::vector<double>(), -1, reduction,
                                                     std::string(op) == "SoftmaxCrossEntropyLoss");
            std::vector<double> got = to_doubles(loss);
            ASSERT_EQ(got.size(), expected.size()) << op << " " << reduction;
            for (size_t i = 0; i < got.size(); ++i) {
              ASSERT_NEAR(got[i], expected[i], (dtype == DType::kFloat32 ? 1e-5 : 1e-12) * std::max(1.0, std::fabs(expected[i])))
                  << op << " " << reduction << (weighted ? " weighted" : "");
            }
          }
        }
      }
    }
  }
}

TEST(LossKernels, CrossEntropyCanAlsoReturnLogProbabilities) {
  Tensor scores = make_tensor(DType::kFloat32, random_values(DType::kFloat32, 12, 5), {3, 4});
  std::vector<Tensor> outputs = run_op("SoftmaxCrossEntropyLoss", {scores, random_labels({3}, 4, 6)}, {}, 2);
  Tensor expected = run_op("LogSoftmax", {scores}, {{"axis", Attribute(1)}})[0];
  std::vector<double> got = to_doubles(outputs[1]), want = to_doubles(expected);
  // f32 LogSoftmax runs oneDNN's vectorized exp/log: a few ulp from the loss kernel's own.
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i])));
}

TEST(LossKernels, LabelOutsideTheClassesNamesNodeAndPosition) {
  Tensor scores(DType::kFloat32, {2, 3});
  try {
    run_op("SoftmaxCrossEntropyLoss", {scores, Tensor::from_vector<int64_t>({1, 7}, {2})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), "op");
    EXPECT_NE(std::string(e.what()).find("label 7 at position 1 is outside [0, 3)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_op("SoftmaxCrossEntropyLoss", {scores, Tensor::from_vector<int64_t>({1, 2, 0}, {3})}), Error);
  EXPECT_THROW(run_op("MeanSquaredError", {scores, scores}, {{"reduction", Attribute("average")}}), Error);
}

TEST(LossKernels, MeanSquaredErrorWithBroadcastTarget) {
  std::vector<double> p = random_values(DType::kFloat64, 12, 8), t = random_values(DType::kFloat64, 4, 9);
  Tensor prediction = make_tensor(DType::kFloat64, p, {3, 4});
  Tensor target = make_tensor(DType::kFloat64, t, {4});
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += (p[i] - t[i % 4]) * (p[i] - t[i % 4]);
  EXPECT_NEAR(to_doubles(run_op("MeanSquaredError", {prediction, target})[0])[0], sum / 12, 1e-12);
  EXPECT_NEAR(to_doubles(run_op("MeanSquaredError", {prediction, target}, {{"reduction", Attribute("sum")}})[0])[0], sum, 1e-12);
  EXPECT_EQ(run_op("MeanSquaredError", {prediction, target}, {{"reduction", Attribute("none")}})[0].sizes(),
            (std::vector<int64_t>{3, 4}));
}

TEST(LossGradients, EveryLossReductionWeightAndIgnoredLabel) {
  uint32_t seed = 20;
  for (const char* reduction : {"none", "sum", "mean"}) {
    std::map<std::string, Attribute> attributes = {{"reduction", Attribute(reduction)}, {"ignore_index", Attribute(-1)}};
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{5, 4}, {2, 3, 3}}) {
      std::vector<int64_t> label_sizes = sizes;
      label_sizes.erase(label_sizes.begin() + 1);
      Tensor scores = make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(sizes), seed++, -2, 2), sizes);
      Tensor labels = random_labels(label_sizes, sizes[1], seed++, -1);
      Tensor weights = make_tensor(DType::kFloat64, random_values(DType::kFloat64, sizes[1], seed++, 0.5, 2), {sizes[1]});
      check_gradient("SoftmaxCrossEntropyLoss", {scores, labels}, {0}, attributes);
      check_gradient("SoftmaxCrossEntropyLoss", {scores, labels, weights}, {0}, attributes);
      check_gradient("NegativeLogLikelihoodLoss", {scores, labels, weights}, {0}, attributes);
    }
    Tensor prediction = make_tensor(DType::kFloat64, random_values(DType::kFloat64, 12, seed++), {3, 4});
    check_gradient("MeanSquaredError", {prediction, make_tensor(DType::kFloat64, random_values(DType::kFloat64, 4, seed++), {4})},
                   {0, 1}, {{"reduction", Attribute(reduction)}});
    check_gradient("MeanSquaredError", {prediction, make_tensor(DType::kFloat64, random_values(DType::kFloat64, 12, seed++), {3, 4})},
                   {0, 1}, {{"reduction", Attribute(reduction)}});
  }
}

}  // namespace
}  // namespace weir
