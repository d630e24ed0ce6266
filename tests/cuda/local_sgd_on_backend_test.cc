// LocalSgdSchedule, LocalSgdAdvance and LocalSgdAverage on each accelerator
// against the CPU kernels, wired as passes/collectives/local_sgd.h wires
// them: the schedule, the parameter and its snapshot are persistent values
// each side keeps across steps, the step, the averaged difference, the
// world's mean loss and lr are fed (so they live on the device and are
// read there). After every step the flag, the parameter, the snapshot and
// the schedule must equal the CPU's bit for bit, for fixed intervals with
// a begin_step and for adaptive LocalSGD on a scripted loss and
// learning-rate sequence; a step below 1 fails as on the CPU.
#include <gmock/gmock.h>

#include <cmath>
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

class LocalSgdOnBackend : public testing::OnBackend {};

constexpr int64_t kCount = 5003;

std::unique_ptr<Graph> local_sgd_graph(int64_t k, int64_t begin_step, bool adaptive) {
  auto g = std::make_unique<Graph>("local_sgd");
  Tensor schedule(DType::kFloat64, {4});
  double* s = schedule.data<double>();
  s[0] = 0;
  s[1] = static_cast<double>(k);
  s[2] = 0;
  s[3] = 0;
  const TensorType type{DType::kFloat32, Shape{kCount}};
  Value* state = g->add_persistent("schedule", {DType::kFloat64, Shape{4}}, PersistentRole::kOptimizerState, schedule);
  Value* param = g->add_persistent("param", type, PersistentRole::kParameter,
                                   testing::random_tensor(DType::kFloat32, {kCount}, 1));
  Value* snapshot = g->add_persistent("snapshot", type, PersistentRole::kOptimizerState,
                                      testing::random_tensor(DType::kFloat32, {kCount}, 2));
  Value* step = g->add_input("step", {DType::kInt64, Shape{}});
  Value* delta = g->add_input("delta", type);
  Node* flag = g->add_node("LocalSgdSchedule", {state, step}, 1, {{"begin_step", Attribute(begin_step)}}, "schedule_step");
  Node* average = g->add_node("LocalSgdAverage", {param, snapshot, delta, flag->output(0)}, 2, {}, "average");
  std::vector<Value*> advance_inputs = {state, step, flag->output(0)};
  std::map<std::string, Attribute> advance_attributes;
  if (adaptive) {
    advance_inputs.push_back(g->add_input("loss", {DType::kFloat32, Shape{}}));
    advance_inputs.push_back(g->add_input("lr", {DType::kFloat32, Shape{}}));
    advance_attributes = {{"adaptive", Attribute(int64_t{1})}, {"init_k_steps", Attribute(k)}};
  }
  Node* advance = g->add_node("LocalSgdAdvance", advance_inputs, 1, advance_attributes, "advance");
  g->add_output(flag->output(0));
  g->add_output(average->output(0));
  g->add_output(average->output(1));
  g->add_output(advance->output(0));
  return g;
}

void expect_steps_match(const Device& device, int64_t k, int64_t begin_step, bool adaptive, int steps) {
  std::unique_ptr<Graph> g = local_sgd_graph(k, begin_step, adaptive);
  StatefulComparison both(device, *g);
  for (int step = 1; step <= steps; ++step) {
    std::map<std::string, Tensor> feeds = {
        {"step", Tensor::scalar<int64_t>(step)},
        {"delta", testing::random_tensor(DType::kFloat32, {kCount}, 100 + static_cast<uint32_t>(step))}};
    if (adaptive) {
      // A falling loss, and the learning rate cut at step 10: the interval grows, then jumps.
      feeds["loss"] = Tensor::scalar<float>(static_cast<float>(2.0 * std::pow(0.8, step)));
      feeds["lr"] = Tensor::scalar<float>(step < 10 ? 0.1f : 0.01f);
    }
    const std::string label = "k " + std::to_string(k) + " begin_step " + std::to_string(begin_step) +
                              (adaptive ? " adaptive" : "") + " step " + std::to_string(step);
    testing::expect_all_close(both.run(feeds), Tolerance{}, label);
    both.expect_states_close({"schedule", "param", "snapshot"}, Tolerance{}, label);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST_P(LocalSgdOnBackend, FixedIntervalsMatchTheCpu) {
  expect_steps_match(GetParam(), 1, 1, false, 4);
  expect_steps_match(GetParam(), 3, 1, false, 10);
  expect_steps_match(GetParam(), 4, 3, false, 12);
}

TEST_P(LocalSgdOnBackend, AdaptiveIntervalsMatchTheCpu) {
  expect_steps_match(GetParam(), 2, 1, true, 20);
  expect_steps_match(GetParam(), 1, 2, true, 16);
}

TEST_P(LocalSgdOnBackend, AStepBelowOneFailsAsOnTheCpu) {
  std::unique_ptr<Graph> g = local_sgd_graph(2, 1, false);
  StatefulComparison both(GetParam(), *g);
  try {
    both.run_on_device({{"step", Tensor::scalar<int64_t>(0)}, {"delta", Tensor(DType::kFloat32, {kCount})}});
    FAIL() << "step 0 was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("step must be at least 1 (it counts from 1), got 0"));
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, LocalSgdOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
