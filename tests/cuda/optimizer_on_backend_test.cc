// The optimizer ops on each accelerator against the CPU kernels, over
// several steps: each side's outputs (the parameter and its state, updated
// in place) are fed back to it with a fresh gradient and the next step
// number, and the two are compared after every step, so a wrong state
// update shows up in the steps after it. Every rule (SGD, Momentum with and
// without Nesterov, Adagrad, Adam, AdamW, LAMB), with and without weight
// decay, tensors of one element up to several multi-tensor batches (sizes
// that are not multiples of the block or the chunk), lr of several types,
// the skip input, ClipByGlobalNorm and Assign, and ONNX's training-preview
// Adagrad, Adam and Momentum (n tensors per node).
#include <gmock/gmock.h>

#include <string>
#include <vector>

#include "ops/optimizer/onnx_training_ops.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/backend_comparison.h"
#include "tests/cuda/multi_output_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::BothRuns;
using testing::make_tensor;
using testing::random_tensor;
using testing::random_values;
using testing::Tolerance;

class OptimizerOnBackend : public testing::OnBackend {};

// The device repeats the CPU's f32 and f64 operations one by one (no FMA
// contraction), so most steps agree bit for bit; what may differ in the last
// f32 bit is what the f64 pow() of the bias corrections and LAMB's norms
// (summed in another order) feed into the rounding. 1e-6 relative bounds
// that with room over a few steps.
const Tolerance kUpdateTolerance{1e-6, 1e-9};

struct Rule {
  const char* op;
  int num_state;  // tensors of state after param and grad
  bool has_step;
  std::map<std::string, Attribute> attributes;
  double lr;
};

std::vector<Rule> rules() {
  return {
      {"SGD", 0, false, {}, 0.05},
      {"Momentum", 1, false, {{"momentum", Attribute(0.9)}}, 0.05},
      {"Momentum", 1, false, {{"momentum", Attribute(0.8)}, {"nesterov", Attribute(int64_t{1})}}, 0.05},
      {"Adagrad", 1, false, {}, 0.1},
      {"Adam", 2, true, {}, 0.01},
      {"AdamW", 2, true, {{"beta1", Attribute(0.85)}, {"beta2", Attribute(0.99)}}, 0.01},
      {"LAMB", 2, true, {}, 0.01},
  };
}

std::string sizes_string(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

// The initial state of a rule: Momentum's velocity any sign, Adagrad's
// accumulator and Adam's v non-negative (they are sums of squares).
Tensor initial_state(const Rule& rule, int index, const std::vector<int64_t>& sizes, uint32_t seed) {
  const int64_t count = testing::count_of(sizes);
  if (std::string(rule.op) == "Momentum") return make_tensor(DType::kFloat32, random_values(DType::kFloat32, count, seed, -1.0, 1.0), sizes);
  if (std::string(rule.op) == "Adagrad") return make_tensor(DType::kFloat32, random_values(DType::kFloat32, count, seed, 0.0, 1.0), sizes);
  return index == 0 ? make_tensor(DType::kFloat32, random_values(DType::kFloat32, count, seed, -0.1, 0.1), sizes)
                    : make_tensor(DType::kFloat32, random_values(DType::kFloat32, count, seed, 0.0, 0.01), sizes);
}

// Runs `steps` updates of `rule` on both sides from the same start, the
// outputs of each step fed back as the next step's parameter and state,
// and compares them after every step.
void expect_steps_match(const Device& device, const Rule& rule, double weight_decay, const std::vector<int64_t>& sizes,
                        int steps, Tensor lr, DType step_type, uint32_t seed) {
  std::map<std::string, Attribute> attributes = rule.attributes;
  attributes["weight_decay"] = Attribute(weight_decay);
  const std::string label = std::string(rule.op) + " weight_decay " + std::to_string(weight_decay) + " " + sizes_string(sizes) +
                            " lr " + lr.type_string() + (rule.has_step ? " step " + std::string(dtype_name(step_type)) : "");
  // param, then the state; each side's own.
  std::vector<Tensor> device_state = {random_tensor(DType::kFloat32, sizes, seed)};
  for (int s = 0; s < rule.num_state; ++s) device_state.push_back(initial_state(rule, s, sizes, seed + 1 + static_cast<uint32_t>(s)));
  std::vector<Tensor> cpu_state = device_state;
  auto inputs_of = [&](const std::vector<Tensor>& state, const Tensor& grad, int step) {
    std::vector<Tensor> inputs = {state[0], grad};
    for (int s = 0; s < rule.num_state; ++s) inputs.push_back(state[1 + static_cast<size_t>(s)]);
    inputs.push_back(lr);
    if (rule.has_step) inputs.push_back(make_tensor(step_type, {static_cast<double>(step)}, {}));
    return inputs;
  };
  const bool failed_before = ::testing::Test::HasFailure();
  for (int step = 1; step <= steps; ++step) {
    Tensor grad = random_tensor(DType::kFloat32, sizes, seed + 10 + static_cast<uint32_t>(step));
    BothRuns runs = testing::run_on_both(device, rule.op, inputs_of(device_state, grad, step), inputs_of(cpu_state, grad, step),
                                         attributes, 1 + static_cast<size_t>(rule.num_state));
    testing::expect_all_close(runs, kUpdateTolerance, label + " after step " + std::to_string(step));
    if (!failed_before && ::testing::Test::HasFailure()) return;  // one broken step of a case is enough to read
    device_state = runs.device;
    cpu_state = runs.cpu;
  }
}

TEST_P(OptimizerOnBackend, EveryRuleMatchesTheCpuOverSeveralSteps) {
  // One element; a block's worth and a bit; a chunk (8192) and one more;
  // several chunks, not a multiple of anything.
  const std::vector<std::vector<int64_t>> sizes = {{1}, {257}, {8193}, {5, 16387}};
  uint32_t seed = 1;
  for (const Rule& rule : rules()) {
    for (double weight_decay : {0.0, 0.01}) {
      for (const std::vector<int64_t>& s : sizes) {
        expect_steps_match(GetParam(), rule, weight_decay, s, 4, make_tensor(DType::kFloat32, {rule.lr}, {}), DType::kInt64, seed);
        seed += 100;
      }
    }
  }
}

// lr of every type the schema takes, read on the device; an i32 step.
TEST_P(OptimizerOnBackend, ScalarsOfEveryTypeAreReadOnTheDevice) {
  uint32_t seed = 5000;
  for (const Rule& rule : rules()) {
    for (DType lr_type : {DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
      expect_steps_match(GetParam(), rule, 0.01, {300}, 2, make_tensor(lr_type, {rule.lr}, {}), DType::kInt32, seed);
      seed += 100;
    }
  }
}

// More chunks than one launch's table holds (320 of 8192): a tensor split
// over launches, LAMB's norm over chunks from several of them.
TEST_P(OptimizerOnBackend, TensorsLargerThanOneLaunchMatchTheCpu) {
  const std::vector<int64_t> sizes = {320 * 8192 + 8195};
  uint32_t seed = 9000;
  for (const Rule& rule : rules()) {
    expect_steps_match(GetParam(), rule, 0.01, sizes, 2, make_tensor(DType::kFloat32, {rule.lr}, {}), DType::kInt64, seed);
    seed += 100;
  }
}

// skip = true (dynamic loss scaling's overflow flag) changes nothing;
// skip = false updates as without it.
TEST_P(OptimizerOnBackend, SkipLeavesEverythingAsItWas) {
  const std::vector<int64_t> sizes = {1000};
  uint32_t seed = 12000;
  for (const Rule& rule : rules()) {
    for (bool skip : {true, false}) {
      std::vector<Tensor> inputs = {random_tensor(DType::kFloat32, sizes, seed), random_tensor(DType::kFloat32, sizes, seed + 1)};
      for (int s = 0; s < rule.num_state; ++s) inputs.push_back(initial_state(rule, s, sizes, seed + 2 + static_cast<uint32_t>(s)));
      inputs.push_back(make_tensor(DType::kFloat32, {rule.lr}, {}));
      if (rule.has_step) inputs.push_back(make_tensor(DType::kInt64, {3}, {}));
      inputs.push_back(make_tensor(DType::kBool, {skip ? 1.0 : 0.0}, {}));
      const std::string label = std::string(rule.op) + (skip ? " skipped" : " not skipped");
      BothRuns runs = testing::expect_outputs_same_as_cpu(GetParam(), rule.op, inputs, rule.attributes,
                                                             1 + static_cast<size_t>(rule.num_state), kUpdateTolerance, label);
      ASSERT_EQ(runs.device.size(), 1 + static_cast<size_t>(rule.num_state)) << label;
      EXPECT_EQ(runs.device[0].bitwise_equal(inputs[0]), skip) << label << ": the parameter " << (skip ? "changed" : "did not change");
      seed += 10;
    }
  }
}

// A step below 1 is the CPU kernel's error; the device, which reads the
// step only on the GPU, leaves the parameter and state unchanged instead.
TEST_P(OptimizerOnBackend, AStepBelowOneChangesNothingOnTheDevice) {
  for (const char* op : {"Adam", "AdamW", "LAMB"}) {
    std::vector<Tensor> inputs = {random_tensor(DType::kFloat32, {100}, 1), random_tensor(DType::kFloat32, {100}, 2),
                                  random_tensor(DType::kFloat32, {100}, 3),
                                  make_tensor(DType::kFloat32, random_values(DType::kFloat32, 100, 4, 0.0, 1.0), {100}),
                                  make_tensor(DType::kFloat32, {0.01}, {}), make_tensor(DType::kInt64, {0}, {})};
    EXPECT_THAT(testing::error_on(Device::cpu(), op, inputs, {}, 3), ::testing::HasSubstr("step must be at least 1")) << op;
    std::vector<Tensor> outputs = testing::run_node_on(GetParam(), op, testing::deep_copies(inputs), {}, 3);
    ASSERT_EQ(outputs.size(), 3u) << op;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(outputs[i].bitwise_equal(inputs[i == 0 ? 0 : i + 1])) << op << " output " << i << " changed";
    }
  }
}

TEST_P(OptimizerOnBackend, ClipByGlobalNormMatchesTheCpu) {
  struct Case {
    std::vector<std::vector<int64_t>> grads;
    double max_norm;
  };
  // 30 gradients: more than one launch's 24 tensors.
  std::vector<std::vector<int64_t>> many;
  for (int64_t i = 0; i < 30; ++i) many.push_back({1 + i * 37});
  const std::vector<Case> cases = {
      {{{3, 5}}, 0.5},                          // clipped
      {{{3, 5}}, 1e6},                          // not clipped: the gradients as they were
      {{{3, 5}, {8193}, {1}, {2, 2, 2}}, 1.0},  // a chunk and one more
      {{{0}, {7}}, 0.1},                        // an empty gradient
      {many, 2.0},
      {{{320 * 8192 + 1}, {100}}, 3.0},  // more chunks than one launch takes
  };
  uint32_t seed = 20000;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Tolerance tolerance = dtype == DType::kFloat32   ? Tolerance{1e-6, 1e-9}
                                : dtype == DType::kFloat16 ? Tolerance{2e-3, 1e-4}
                                                           : Tolerance{1e-2, 1e-3};
    for (const Case& c : cases) {
      std::vector<Tensor> grads;
      for (const auto& sizes : c.grads) grads.push_back(random_tensor(dtype, sizes, seed++));
      const std::string label = std::string(dtype_name(dtype)) + " " + std::to_string(grads.size()) + " gradients, max_norm " +
                                std::to_string(c.max_norm);
      testing::expect_outputs_same_as_cpu(GetParam(), "ClipByGlobalNorm", grads, {{"max_norm", Attribute(c.max_norm)}},
                                             grads.size() + 1, tolerance, label);
    }
  }
}

TEST_P(OptimizerOnBackend, AssignCopiesTheValueIntoTheTarget) {
  uint32_t seed = 30000;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{}, {0}, {3, 7}, {10001}}) {
      Tensor target = random_tensor(dtype, sizes, seed++);
      Tensor value = random_tensor(dtype, sizes, seed++);
      BothRuns runs = testing::expect_outputs_same_as_cpu(GetParam(), "Assign", {target, value}, {}, 1, Tolerance{},
                                                             std::string(dtype_name(dtype)) + " " + sizes_string(sizes));
      ASSERT_EQ(runs.device.size(), 1u);
      EXPECT_TRUE(runs.device[0].bitwise_equal(value)) << std::string(dtype_name(dtype)) << " " << sizes_string(sizes);
    }
  }
}

// ONNX's training-preview ops, one node updating n tensors (out of place).
std::vector<Tensor> run_onnx_training_on(const Device& device, const std::string& op, const std::vector<Tensor>& inputs,
                                         const std::map<std::string, Attribute>& attributes, size_t num_outputs) {
  testing::SingleOpGraph single = testing::single_op_graph(op, testing::deep_copies(inputs), attributes, num_outputs);
  single.graph->find_node("op")->set_domain(kOnnxTrainingDomain);
  CompileOptions options;
  options.default_device = device;
  Session session(compile(*single.graph, options));
  return session.run(single.feeds);
}

// Steps T = 0, 1, 2 of each rule over n tensors (3, and 30: more than one
// launch's table), each side's new X and state fed back, compared after
// every step; f32 and f64 tensors, and a node with only the X outputs.
TEST_P(OptimizerOnBackend, OnnxTrainingOpsMatchTheCpuOverSeveralSteps) {
  struct Case {
    const char* op;
    int num_state;
    std::map<std::string, Attribute> attributes;
  };
  const std::vector<Case> cases = {
      {"Adagrad", 1, {{"decay_factor", Attribute(0.1f)}, {"norm_coefficient", Attribute(0.01f)}}},
      {"Adam", 2, {{"norm_coefficient", Attribute(0.01f)}, {"norm_coefficient_post", Attribute(0.001f)}}},
      {"Adam", 2, {}},
      {"Momentum", 1,
       {{"alpha", Attribute(0.9f)}, {"beta", Attribute(0.5f)}, {"mode", Attribute(std::string("standard"))},
        {"norm_coefficient", Attribute(0.01f)}}},
      {"Momentum", 1,
       {{"alpha", Attribute(0.8f)}, {"beta", Attribute(1.0f)}, {"mode", Attribute(std::string("nesterov"))},
        {"norm_coefficient", Attribute(0.0f)}}},
  };
  std::vector<std::vector<int64_t>> many;
  for (int64_t i = 0; i < 30; ++i) many.push_back({1 + i * 53});
  const std::vector<std::vector<std::vector<int64_t>>> tensor_lists = {{{5}, {3, 8193}, {1}}, many};
  uint32_t seed = 40000;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    // All arithmetic is f64 on both sides; only pow() in the step's rate may
    // differ in its last bit.
    const Tolerance tolerance = dtype == DType::kFloat32 ? kUpdateTolerance : Tolerance{1e-12, 1e-15};
    for (const Case& c : cases) {
      for (const auto& sizes : tensor_lists) {
        for (bool all_outputs : {true, false}) {
          const size_t n = sizes.size();
          const size_t num_outputs = all_outputs ? n * (1 + static_cast<size_t>(c.num_state)) : n;
          // X..., then each state...: each side's own.
          std::vector<Tensor> device_values, cpu_values;
          for (size_t i = 0; i < n; ++i) device_values.push_back(random_tensor(dtype, sizes[i], seed++));
          for (int s = 0; s < c.num_state; ++s) {
            // Adam's H and Adagrad's H are sums of squares: non-negative.
            const bool squares = (std::string(c.op) == "Adam" && s == 1) || std::string(c.op) == "Adagrad";
            for (size_t i = 0; i < n; ++i) {
              device_values.push_back(make_tensor(dtype, random_values(dtype, testing::count_of(sizes[i]), seed++, squares ? 0.0 : -1.0, 1.0), sizes[i]));
            }
          }
          cpu_values = device_values;
          const bool failed_before = ::testing::Test::HasFailure();
          for (int64_t t = 0; t < 3; ++t) {
            std::vector<Tensor> grads;
            for (size_t i = 0; i < n; ++i) grads.push_back(random_tensor(dtype, sizes[i], seed++));
            auto inputs_of = [&](const std::vector<Tensor>& values) {
              std::vector<Tensor> inputs = {make_tensor(DType::kFloat32, {0.05}, {}), make_tensor(DType::kInt64, {static_cast<double>(t)}, {})};
              inputs.insert(inputs.end(), values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
              inputs.insert(inputs.end(), grads.begin(), grads.end());
              inputs.insert(inputs.end(), values.begin() + static_cast<std::ptrdiff_t>(n), values.end());
              return inputs;
            };
            BothRuns runs;
            runs.cpu = run_onnx_training_on(Device::cpu(), c.op, inputs_of(cpu_values), c.attributes, num_outputs);
            runs.device = run_onnx_training_on(GetParam(), c.op, inputs_of(device_values), c.attributes, num_outputs);
            const std::string label = std::string(c.op) + " " + std::string(dtype_name(dtype)) + " " + std::to_string(n) +
                                      " tensors" + (all_outputs ? "" : " (X outputs only)") + " T=" + std::to_string(t);
            testing::expect_all_close(runs, tolerance, label);
            if (!failed_before && ::testing::Test::HasFailure()) break;
            if (!all_outputs) break;  // without the new state there is nothing to feed back
            device_values = runs.device;
            cpu_values = runs.cpu;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, OptimizerOnBackend, ::testing::Values(Device::cuda(0)), testing::device_test_name);

}  // namespace
}  // namespace weir
