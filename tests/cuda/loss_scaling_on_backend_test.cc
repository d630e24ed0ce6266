// Dynamic loss scaling on each accelerator against the CPU kernels:
// UnscaleGradients on finite gradients, on gradients holding an Inf or a
// NaN (in the first, a middle or the last chunk of a list longer than one
// launch takes), f32, f16 and bf16; UpdateLossScale run as a state machine
// over a sequence of clean and overflowed steps, its outputs fed back, the
// scale growing after growth_interval clean steps and backing off on an
// overflow, within [min_scale, max_scale].
#include <gmock/gmock.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::BothRuns;
using testing::make_tensor;
using testing::random_tensor;
using testing::Tolerance;

class LossScalingOnBackend : public testing::OnBackend {};

bool flag_of(const Tensor& found_inf) { return found_inf.data<bool>()[0]; }

// Gradients of `dtype` with `bad` (Inf or NaN; 0: none) written at element
// `at` of gradient `which`.
std::vector<Tensor> gradients(DType dtype, const std::vector<std::vector<int64_t>>& sizes, uint32_t seed, double bad = 0,
                              size_t which = 0, int64_t at = 0) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < sizes.size(); ++i) {
    // Scaled gradients: large values, as a loss scale of 2^10 makes them.
    std::vector<double> values = testing::random_values(dtype, testing::count_of(sizes[i]), seed + static_cast<uint32_t>(i), -1000.0, 1000.0);
    if (bad != 0 && i == which) values[static_cast<size_t>(at)] = bad;
    grads.push_back(make_tensor(dtype, values, sizes[i]));
  }
  return grads;
}

BothRuns unscale(const Device& device, float scale, const std::vector<Tensor>& grads, const std::string& label) {
  std::vector<Tensor> inputs = {make_tensor(DType::kFloat32, {scale}, {})};
  inputs.insert(inputs.end(), grads.begin(), grads.end());
  // The same f32 factor multiplies on both sides: bit for bit.
  return testing::expect_outputs_same_as_cpu(device, "UnscaleGradients", inputs, {}, grads.size() + 1, Tolerance{}, label);
}

TEST_P(LossScalingOnBackend, UnscaleGradientsMatchesTheCpu) {
  std::vector<std::vector<int64_t>> many;
  for (int64_t i = 0; i < 30; ++i) many.push_back({3 + i * 101});
  many.push_back({320 * 8192 + 3});  // past one launch's chunks
  const std::vector<std::vector<std::vector<int64_t>>> lists = {{{7}}, {{3, 5}, {8193}, {1}, {0}}, many};
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const auto& sizes : lists) {
      const std::string what = std::string(dtype_name(dtype)) + " " + std::to_string(sizes.size()) + " gradients";
      BothRuns clean = unscale(GetParam(), 1024.0f, gradients(dtype, sizes, seed), what + ", finite");
      ASSERT_FALSE(clean.device.empty());
      EXPECT_FALSE(flag_of(clean.device[0])) << what;
      // A non-power-of-two scale: 1 / scale is rounded.
      unscale(GetParam(), 3000.0f, gradients(dtype, sizes, seed + 1), what + ", scale 3000");
      // An Inf or a NaN in the first element of the first gradient, and in
      // the last element of the last one.
      for (double bad : {inf, -inf, nan}) {
        for (bool last : {false, true}) {
          const size_t which = last ? sizes.size() - 1 : 0;
          const int64_t count = testing::count_of(sizes[which]);
          if (count == 0) continue;
          const std::string label = what + ", " + std::to_string(bad) + (last ? " last" : " first");
          BothRuns overflowed = unscale(GetParam(), 1024.0f, gradients(dtype, sizes, seed + 2, bad, which, last ? count - 1 : 0), label);
          ASSERT_FALSE(overflowed.device.empty());
          EXPECT_TRUE(flag_of(overflowed.device[0])) << label;
        }
      }
      seed += 10;
    }
  }
}

// A scale that is not positive and finite is the CPU kernel's error; the
// device, which reads the scale only on the GPU, reports it as found_inf
// so the step is skipped.
TEST_P(LossScalingOnBackend, AnUnusableScaleSetsFoundInfOnTheDevice) {
  std::vector<Tensor> grads = gradients(DType::kFloat32, {{5}}, 7);
  for (float scale : {0.0f, -2.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<Tensor> inputs = {make_tensor(DType::kFloat32, {scale}, {}), grads[0]};
    EXPECT_THAT(testing::error_on(Device::cpu(), "UnscaleGradients", inputs, {}, 2),
                ::testing::HasSubstr("the loss scale must be positive and finite"))
        << scale;
    std::vector<Tensor> outputs = testing::run_node_on(GetParam(), "UnscaleGradients", inputs, {}, 2);
    ASSERT_EQ(outputs.size(), 2u);
    EXPECT_TRUE(flag_of(outputs[0])) << "scale " << scale;
  }
}

// The state machine over a sequence of steps, each side fed its own
// outputs: the device's scale and good_steps equal the CPU's after every
// step, and follow the rule (checked here independently of both kernels).
TEST_P(LossScalingOnBackend, UpdateLossScaleFollowsTheCpuStepByStep) {
  struct Schedule {
    double growth, backoff;
    int64_t interval;
    double min_scale, max_scale, start;
  };
  const std::vector<Schedule> schedules = {
      {2.0, 0.5, 3, 1.0, 16777216.0, 1024.0},
      {2.0, 0.5, 1, 1.0, 4096.0, 1024.0},    // grows every clean step until max_scale
      {3.0, 0.25, 2, 100.0, 1e9, 1000.0},    // backs off to min_scale
  };
  // Clean steps (false) and overflows (true).
  const std::vector<bool> overflows = {false, false, false, false, true, false, true, true, true, false, false, false,
                                       false, false, false, false, true, false, false, false};
  for (const Schedule& s : schedules) {
    const std::map<std::string, Attribute> attributes = {
        {"growth_factor", Attribute(s.growth)}, {"backoff_factor", Attribute(s.backoff)},
        {"growth_interval", Attribute(s.interval)}, {"min_scale", Attribute(s.min_scale)}, {"max_scale", Attribute(s.max_scale)}};
    Tensor device_scale = make_tensor(DType::kFloat32, {s.start}, {}), cpu_scale = device_scale;
    Tensor device_good = make_tensor(DType::kInt64, {0}, {}), cpu_good = device_good;
    double expected_scale = static_cast<float>(s.start);
    int64_t expected_good = 0;
    for (size_t step = 0; step < overflows.size(); ++step) {
      Tensor found = make_tensor(DType::kBool, {overflows[step] ? 1.0 : 0.0}, {});
      BothRuns runs = testing::run_on_both(GetParam(), "UpdateLossScale", {device_scale, device_good, found},
                                           {cpu_scale, cpu_good, found}, attributes, 2);
      const std::string label = "growth_interval " + std::to_string(s.interval) + " step " + std::to_string(step);
      testing::expect_all_close(runs, Tolerance{}, label);
      if (overflows[step]) {
        expected_scale = static_cast<float>(std::max(s.min_scale, expected_scale * s.backoff));
        expected_good = 0;
      } else if (++expected_good >= s.interval) {
        expected_scale = static_cast<float>(std::min(s.max_scale, expected_scale * s.growth));
        expected_good = 0;
      }
      ASSERT_EQ(runs.device.size(), 2u) << label;
      EXPECT_EQ(runs.device[0].data<float>()[0], expected_scale) << label;
      EXPECT_EQ(runs.device[1].data<int64_t>()[0], expected_good) << label;
      device_scale = runs.device[0];
      device_good = runs.device[1];
      cpu_scale = runs.cpu[0];
      cpu_good = runs.cpu[1];
    }
  }
}

// The pieces together as an fp16 AMP step runs them on the device:
// UnscaleGradients' found_inf skips Adam's update and backs the scale off.
TEST_P(LossScalingOnBackend, AnOverflowSkipsTheUpdateAndBacksOff) {
  for (bool overflow : {false, true}) {
    std::vector<Tensor> grads = gradients(DType::kFloat32, {{1000}}, 40, overflow ? std::numeric_limits<double>::infinity() : 0, 0, 500);
    std::vector<Tensor> unscaled = testing::run_node_on(GetParam(), "UnscaleGradients",
                                                        {make_tensor(DType::kFloat32, {1024.0}, {}), grads[0]}, {}, 2);
    ASSERT_EQ(unscaled.size(), 2u);
    EXPECT_EQ(flag_of(unscaled[0]), overflow);
    Tensor param = random_tensor(DType::kFloat32, {1000}, 41);
    std::vector<Tensor> adam_inputs = {param, unscaled[1], random_tensor(DType::kFloat32, {1000}, 42),
                                       make_tensor(DType::kFloat32, testing::random_values(DType::kFloat32, 1000, 43, 0.0, 1.0), {1000}),
                                       make_tensor(DType::kFloat32, {0.01}, {}), make_tensor(DType::kInt64, {2}, {}), unscaled[0]};
    BothRuns adam = testing::expect_outputs_same_as_cpu(GetParam(), "Adam", adam_inputs, {}, 3, Tolerance{1e-6, 1e-9},
                                                           overflow ? "overflowed" : "clean");
    ASSERT_FALSE(adam.device.empty());
    EXPECT_EQ(adam.device[0].bitwise_equal(param), overflow);
    std::vector<Tensor> scale = testing::run_node_on(
        GetParam(), "UpdateLossScale", {make_tensor(DType::kFloat32, {1024.0}, {}), make_tensor(DType::kInt64, {5}, {}), unscaled[0]}, {}, 2);
    ASSERT_EQ(scale.size(), 2u);
    EXPECT_EQ(scale[0].data<float>()[0], overflow ? 512.0f : 1024.0f);
    EXPECT_EQ(scale[1].data<int64_t>()[0], overflow ? 0 : 6);
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, LossScalingOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
