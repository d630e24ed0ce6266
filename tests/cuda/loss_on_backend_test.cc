// The loss ops on each accelerator against the CPU kernels:
// SoftmaxCrossEntropyLoss (with and without its log_prob output),
// NegativeLogLikelihoodLoss, MeanSquaredError and their backward ops, for
// every reduction, with and without class weights and ignore_index, i32
// and i64 labels, inner axes ([N, C, D...]), empty batches; f32, f16, bf16.
// A label outside [0, C) fails the node on the device with the CPU's message.
#include <gmock/gmock.h>

#include <random>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::BothRuns;
using testing::error_on;
using testing::expect_outputs_same_as_cpu;
using testing::make_tensor;
using testing::random_tensor;
using testing::Tolerance;
using testing::without_location;

class LossOnBackend : public testing::OnBackend {};

// Sums are f64 on both sides and every output is one rounding of an f64
// value, so the outputs agree to the last bit or two of the output type.
Tolerance tolerance_for(DType dtype) {
  return dtype == DType::kFloat32 ? Tolerance{1e-5, 1e-7} : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-4} : Tolerance{1e-2, 1e-3};
}

// Labels in [0, classes), every `ignore_every`-th (when > 0) set to `ignored`.
Tensor labels_for(DType dtype, const std::vector<int64_t>& sizes, int64_t classes, uint32_t seed, int ignore_every = 0,
                  int64_t ignored = -100) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int64_t> distribution(0, classes > 0 ? classes - 1 : 0);
  std::vector<double> values(static_cast<size_t>(testing::count_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<double>(ignore_every > 0 && i % static_cast<size_t>(ignore_every) == 1 ? ignored : distribution(engine));
  }
  return make_tensor(dtype, values, sizes);
}

std::string sizes_string(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

std::vector<int64_t> without_class_axis(std::vector<int64_t> sizes) {
  sizes.erase(sizes.begin() + 1);
  return sizes;
}

struct ClassCase {
  std::vector<int64_t> scores;
  bool weights;
  int ignore_every;  // 0: no ignore_index attribute
};

const std::vector<ClassCase> kClassCases = {
    {{64, 10}, false, 0},     // LeNet's loss
    {{64, 10}, true, 5},      // weighted, some positions ignored
    {{5, 1000}, true, 0},     // more classes than a block has threads
    {{3, 4, 5}, false, 3},    // an inner axis: [N, C, D]
    {{2, 7, 3, 2}, true, 4},  // two inner axes
    {{1, 1}, false, 0},
    {{0, 5}, true, 0},        // no positions: the mean is 0 / 0
    {{4, 3}, false, 2},       // half the positions ignored
};

std::map<std::string, Attribute> class_attributes(const ClassCase& c, const char* reduction) {
  std::map<std::string, Attribute> attributes = {{"reduction", Attribute(std::string(reduction))}};
  if (c.ignore_every > 0) attributes.emplace("ignore_index", Attribute(int64_t{-100}));
  return attributes;
}

TEST_P(LossOnBackend, ClassLossesMatchTheCpu) {
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (DType label_type : {DType::kInt64, DType::kInt32}) {
      for (const ClassCase& c : kClassCases) {
        for (const char* reduction : {"none", "sum", "mean"}) {
          const std::string label = std::string(dtype_name(dtype)) + " scores " + sizes_string(c.scores) + " " +
                                    std::string(dtype_name(label_type)) + " labels, reduction " + reduction +
                                    (c.weights ? ", weighted" : "") + (c.ignore_every > 0 ? ", ignore_index" : "");
          Tensor scores = make_tensor(dtype, testing::random_values(dtype, testing::count_of(c.scores), seed++, -8.0, 8.0), c.scores);
          Tensor labels = labels_for(label_type, without_class_axis(c.scores), c.scores[1], seed++, c.ignore_every);
          std::vector<Tensor> inputs = {scores, labels};
          if (c.weights) inputs.push_back(make_tensor(dtype, testing::random_values(dtype, c.scores[1], seed++, 0.1, 2.0), {c.scores[1]}));
          const auto attributes = class_attributes(c, reduction);
          const Tolerance tolerance = tolerance_for(dtype);
          // With log_prob, and without (the kernel then writes no second output).
          expect_outputs_same_as_cpu(GetParam(), "SoftmaxCrossEntropyLoss", inputs, attributes, 2, tolerance, label);
          expect_outputs_same_as_cpu(GetParam(), "SoftmaxCrossEntropyLoss", inputs, attributes, 1, tolerance, label);
          // NLL reads its input as log-probabilities: any values will do.
          expect_outputs_same_as_cpu(GetParam(), "NegativeLogLikelihoodLoss", inputs, attributes, 1, tolerance, label);

          // The backward ops: dY per position for none, else a scalar;
          // the reference log_prob as the forward op makes it.
          const std::vector<int64_t> dy_sizes = std::string(reduction) == "none" ? labels.sizes() : std::vector<int64_t>{};
          Tensor dy = make_tensor(dtype, testing::random_values(dtype, testing::count_of(dy_sizes), seed++, -2.0, 2.0), dy_sizes);
          Tensor log_prob = testing::run_node_on(Device::cpu(), "LogSoftmax", {scores}, {{"axis", Attribute(int64_t{1})}})[0];
          std::vector<Tensor> grad_inputs = {dy, log_prob, labels};
          if (c.weights) grad_inputs.push_back(inputs[2]);
          expect_outputs_same_as_cpu(GetParam(), "SoftmaxCrossEntropyLossGrad", grad_inputs, attributes, 1, tolerance, label);
          grad_inputs[1] = scores;
          expect_outputs_same_as_cpu(GetParam(), "NegativeLogLikelihoodLossGrad", grad_inputs, attributes, 1, tolerance, label);
        }
      }
    }
  }
}

// A position whose label is outside [0, C) (and not ignore_index) fails the
// node on the device as on the CPU, naming the first such position and its
// label, forward and backward, whatever the reduction.
TEST_P(LossOnBackend, LabelsOutsideTheClassesFailAsOnTheCpu) {
  const int64_t classes = 10;
  for (DType label_type : {DType::kInt64, DType::kInt32}) {
    for (int64_t bad : {int64_t{10}, int64_t{-1}, int64_t{1000000}}) {
      for (const char* reduction : {"none", "sum", "mean"}) {
        Tensor scores = random_tensor(DType::kFloat32, {6, classes}, 3);
        std::vector<double> label_values = {1, 2, 3, static_cast<double>(bad), 4, static_cast<double>(bad)};
        Tensor labels = make_tensor(label_type, label_values, {6});
        const std::map<std::string, Attribute> attributes = {{"reduction", Attribute(std::string(reduction))}};
        const std::string expected = "label " + std::to_string(bad) + " at position 3 is outside [0, 10)";
        const std::string what = std::string(dtype_name(label_type)) + " label " + std::to_string(bad) + ", " + reduction;
        for (const char* op : {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}) {
          EXPECT_THAT(error_on(Device::cpu(), op, {scores, labels}, attributes), ::testing::HasSubstr(expected)) << op << " " << what;
          EXPECT_THAT(error_on(GetParam(), op, {scores, labels}, attributes), ::testing::HasSubstr(expected)) << op << " " << what;
        }
        const std::vector<int64_t> dy_sizes = std::string(reduction) == "none" ? std::vector<int64_t>{6} : std::vector<int64_t>{};
        Tensor dy = random_tensor(DType::kFloat32, dy_sizes, 4);
        for (const char* op : {"SoftmaxCrossEntropyLossGrad", "NegativeLogLikelihoodLossGrad"}) {
          EXPECT_THAT(error_on(Device::cpu(), op, {dy, scores, labels}, attributes), ::testing::HasSubstr(expected)) << op << " " << what;
          EXPECT_THAT(error_on(GetParam(), op, {dy, scores, labels}, attributes), ::testing::HasSubstr(expected)) << op << " " << what;
        }
      }
    }
  }
  // A label equal to ignore_index is never checked, even outside [0, C).
  Tensor scores = random_tensor(DType::kFloat32, {3, classes}, 5);
  Tensor labels = make_tensor(DType::kInt64, {1, -7, 2}, {3});
  expect_outputs_same_as_cpu(GetParam(), "SoftmaxCrossEntropyLoss", {scores, labels}, {{"ignore_index", Attribute(int64_t{-7})}}, 1,
                                tolerance_for(DType::kFloat32), "ignored label outside the classes");
}

// Labels that do not match the scores fail on the device exactly as on the CPU.
TEST_P(LossOnBackend, BadShapesFailAsOnTheCpu) {
  Tensor scores = random_tensor(DType::kFloat32, {4, 5}, 1);
  Tensor labels = make_tensor(DType::kInt64, {0, 1, 2}, {3});
  for (const char* op : {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}) {
    const std::string cpu = error_on(Device::cpu(), op, {scores, labels}, {});
    EXPECT_NE(cpu, "no error") << op;
    EXPECT_EQ(without_location(error_on(GetParam(), op, {scores, labels}, {})), without_location(cpu)) << op;
  }
  Tensor dy = random_tensor(DType::kFloat32, {2}, 2);  // reduction mean takes a scalar dY
  Tensor good_labels = make_tensor(DType::kInt64, {0, 1, 2, 3}, {4});
  for (const char* op : {"SoftmaxCrossEntropyLossGrad", "NegativeLogLikelihoodLossGrad"}) {
    const std::string cpu = error_on(Device::cpu(), op, {dy, scores, good_labels}, {});
    EXPECT_THAT(cpu, ::testing::HasSubstr("dY has 2 elements, expected 1")) << op;
    EXPECT_EQ(without_location(error_on(GetParam(), op, {dy, scores, good_labels}, {})), without_location(cpu)) << op;
  }
}

TEST_P(LossOnBackend, MeanSquaredErrorMatchesTheCpu) {
  struct Case {
    std::vector<int64_t> prediction, target;
  };
  const std::vector<Case> cases = {
      {{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{4, 5}, {4, 1}}, {{3, 4, 5}, {}}, {{}, {}}, {{1000, 37}, {1000, 37}},
      {{0, 3}, {3}},  // no elements: the mean is 0 / 0
      {{70000}, {70000}},  // more elements than one reduction block covers in one pass
  };
  uint32_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : cases) {
      for (const char* reduction : {"none", "sum", "mean"}) {
        const std::string label = std::string(dtype_name(dtype)) + " " + sizes_string(c.prediction) + " - " +
                                  sizes_string(c.target) + ", " + reduction;
        Tensor prediction = random_tensor(dtype, c.prediction, seed++);
        Tensor target = random_tensor(dtype, c.target, seed++);
        const std::map<std::string, Attribute> attributes = {{"reduction", Attribute(std::string(reduction))}};
        const Tolerance tolerance = tolerance_for(dtype);
        expect_outputs_same_as_cpu(GetParam(), "MeanSquaredError", {prediction, target}, attributes, 1, tolerance, label);
        const std::vector<int64_t> dy_sizes = std::string(reduction) == "none" ? c.prediction : std::vector<int64_t>{};
        Tensor dy = random_tensor(dtype, dy_sizes, seed++);
        expect_outputs_same_as_cpu(GetParam(), "MeanSquaredErrorGrad", {dy, prediction, target}, attributes, 1, tolerance, label);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, LossOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
