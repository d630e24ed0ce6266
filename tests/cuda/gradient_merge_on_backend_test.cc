// GradientMerge on each accelerator against the CPU kernel, as gradient
// merge runs it: the accumulator is a persistent value each side keeps
// across steps, the apply flag fed (so it lives on the device and is read
// there), and after every step the merged gradient and the accumulator
// must equal the CPU's bit for bit, for the average (scale 1/k) and the
// sum, from one element to several launches' worth.
#include <gmock/gmock.h>

#include <string>
#include <vector>

#include "core/graph.h"
#include "tests/backend_comparison.h"
#include "tests/cuda/stateful_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::StatefulComparison;
using testing::Tolerance;

class GradientMergeOnBackend : public testing::OnBackend {};

std::unique_ptr<Graph> merge_graph(const std::vector<int64_t>& sizes, double scale, uint32_t seed) {
  auto g = std::make_unique<Graph>("gradient_merge");
  const TensorType type{DType::kFloat32, Shape::from_sizes(sizes)};
  Value* accumulator = g->add_persistent("accumulator", type, PersistentRole::kOptimizerState,
                                         testing::random_tensor(DType::kFloat32, sizes, seed));
  Value* grad = g->add_input("grad", type);
  Value* apply = g->add_input("apply", {DType::kBool, Shape{}});
  Node* merge = g->add_node("GradientMerge", {accumulator, grad, apply}, 1, {{"scale", Attribute(scale)}}, "merge");
  g->add_output(merge->output(0));
  return g;
}

TEST_P(GradientMergeOnBackend, MergedGradientAndAccumulatorMatchTheCpuOverSteps) {
  const std::vector<std::vector<int64_t>> sizes = {{1}, {257}, {3, 70001}};
  // Micro-steps of a merge of 3, then of 2.
  const std::vector<bool> applies = {false, false, true, false, true, true};
  uint32_t seed = 1;
  for (const std::vector<int64_t>& s : sizes) {
    for (double scale : {1.0 / 3.0, 1.0}) {
      std::unique_ptr<Graph> g = merge_graph(s, scale, seed);
      StatefulComparison both(GetParam(), *g);
      for (size_t step = 0; step < applies.size(); ++step) {
        const std::string label = "numel " + std::to_string(testing::count_of(s)) + " scale " + std::to_string(scale) +
                                  " step " + std::to_string(step) + (applies[step] ? " (apply)" : "");
        Tensor grad = testing::random_tensor(DType::kFloat32, s, seed + 10 + static_cast<uint32_t>(step));
        testing::expect_all_close(both.run({{"grad", grad}, {"apply", Tensor::scalar<bool>(applies[step])}}), Tolerance{},
                                  label);
        both.expect_states_close({"accumulator"}, Tolerance{}, label);
        if (HasFailure()) return;
      }
      seed += 100;
    }
  }
}

TEST_P(GradientMergeOnBackend, AnEmptyGradientMergesToAnEmptyResult) {
  std::unique_ptr<Graph> g = merge_graph({0, 4}, 0.5, 5);
  StatefulComparison both(GetParam(), *g);
  testing::expect_all_close(both.run({{"grad", Tensor(DType::kFloat32, {0, 4})}, {"apply", Tensor::scalar<bool>(true)}}),
                            Tolerance{}, "empty");
}

INSTANTIATE_TEST_SUITE_P(Cuda, GradientMergeOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
