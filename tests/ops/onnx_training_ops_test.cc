// ONNX's training-preview Adagrad, Adam and Momentum (domain
// "ai.onnx.preview.training") against references written from the ONNX
// docs' pseudo code, over several steps (T = 0, 1, 2, ...) with several
// tensors of different shapes, and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "ops/optimizer/onnx_training_ops.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::make_tensor;
using testing::random_values;
using testing::to_doubles;

using Attributes = std::map<std::string, Attribute>;

std::unique_ptr<Graph> training_graph(const std::string& op, const std::vector<Tensor>& inputs, Attributes attributes,
                                      size_t num_outputs, std::map<std::string, Tensor>& feeds) {
  testing::SingleOpGraph single = testing::single_op_graph(op, inputs, std::move(attributes), num_outputs);
  single.graph->find_node("op")->set_domain(kOnnxTrainingDomain);
  feeds = single.feeds;
  return std::move(single.graph);
}

// Runs the node through type inference and the CPU kernel.
std::vector<Tensor> run_training(const std::string& op, const std::vector<Tensor>& inputs, Attributes attributes,
                                 size_t num_outputs) {
  std::map<std::string, Tensor> feeds;
  std::unique_ptr<Graph> graph = training_graph(op, inputs, std::move(attributes), num_outputs, feeds);
  infer_graph_types(*graph, default_op_registry());
  return evaluate_graph(*graph, feeds);
}

// Runs only the kernel (no inference), to reach its own checks.
void run_kernel_only(const std::string& op, const std::vector<Tensor>& inputs, Attributes attributes,
                     size_t num_outputs) {
  std::map<std::string, Tensor> feeds;
  std::unique_ptr<Graph> graph = training_graph(op, inputs, std::move(attributes), num_outputs, feeds);
  const Node& node = *graph->find_node("op");
  KernelContext ctx(node, inputs, cpu_allocator());
  default_kernel_registry().create(node, DeviceType::kCpu)->compute(ctx);
}

// The message of the error `fn` throws (a weir::Error), or "no error".
std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// One element's step as the ONNX docs write it: x and the state (H; V, H; V)
// are updated in place from the gradient g, learning rate R and count T.
using ReferenceStep = std::function<void(double R, int64_t T, double& x, double g, std::vector<double>& state)>;

ReferenceStep adagrad_reference(double decay_factor, double epsilon, double norm_coefficient) {
  return [=](double R, int64_t T, double& x, double g, std::vector<double>& state) {
    double& h = state[0];
    double r = R / (1 + static_cast<double>(T) * decay_factor);
    double g_regularized = norm_coefficient * x + g;
    h = h + g_regularized * g_regularized;
    double h_adaptive = std::sqrt(h) + epsilon;
    x = x - r * g_regularized / h_adaptive;
  };
}

ReferenceStep adam_reference(double alpha, double beta, double epsilon, double norm_coefficient,
                             double norm_coefficient_post) {
  return [=](double R, int64_t T, double& x, double g, std::vector<double>& state) {
    double& v = state[0];
    double& h = state[1];
    double g_regularized = norm_coefficient * x + g;
    v = alpha * v + (1 - alpha) * g_regularized;
    h = beta * h + (1 - beta) * g_regularized * g_regularized;
    double h_sqrt = std::sqrt(h) + epsilon;
    double t = static_cast<double>(T);
    double r_adjusted = T > 0 ? R * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : R;
    double x_new = x - r_adjusted * v / h_sqrt;
    x = (1 - norm_coefficient_post) * x_new;
  };
}

ReferenceStep momentum_reference(double alpha, double beta, double norm_coefficient, bool nesterov) {
  return [=](double R, int64_t T, double& x, double g, std::vector<double>& state) {
    double& v = state[0];
    double g_regularized = norm_coefficient * x + g;
    double beta_adjusted = T > 0 ? beta : 1;
    v = alpha * v + beta_adjusted * g_regularized;
    x = nesterov ? x - R * (g_regularized + alpha * v) : x - R * v;
  };
}

// `values` as `dtype` holds them (f32 rounds).
std::vector<double> rounded(DType dtype, const std::vector<double>& values) {
  return to_doubles(make_tensor(dtype, values, {static_cast<int64_t>(values.size())}));
}

// Runs `steps` updates of tensors of `shapes` (T = first_t, first_t + 1,
// ...), each with fresh random gradients, feeding the kernel's outputs back
// in, and compares every output with the reference after every step (the
// reference keeps its own state in f64 throughout).
void check_steps(const std::string& op, Attributes attributes, const ReferenceStep& reference, size_t num_state,
                 DType dtype, DType r_dtype, const std::vector<std::vector<int64_t>>& shapes, int steps,
                 int64_t first_t, uint32_t seed) {
  SCOPED_TRACE(op + " " + std::string(dtype_name(dtype)) + " R " + std::string(dtype_name(r_dtype)));
  const size_t n = shapes.size();
  // values[role][i]: role 0 X, 1 G, 2.. the state.
  std::vector<std::vector<std::vector<double>>> values(2 + num_state, std::vector<std::vector<double>>(n));
  for (size_t i = 0; i < n; ++i) {
    int64_t count = testing::count_of(shapes[i]);
    values[0][i] = rounded(dtype, random_values(dtype, count, seed + static_cast<uint32_t>(i)));
    for (size_t s = 0; s < num_state; ++s) {
      // Squared-gradient accumulators are never negative; momenta may be.
      bool squares = s + 1 == num_state && op != "Momentum";
      values[2 + s][i] = rounded(dtype, random_values(dtype, count, seed + 100 + static_cast<uint32_t>(10 * s + i),
                                                      squares ? 0.0 : -2.0, 2.0));
    }
  }
  // The kernel's current tensors (f32 rounds them), and the reference's.
  std::vector<std::vector<std::vector<double>>> reference_values = values;
  const double tolerance = dtype == DType::kFloat32 ? 2e-5 : 1e-12;
  for (int step = 0; step < steps; ++step) {
    const int64_t T = first_t + step;
    const double R = rounded(r_dtype, {0.05 + 0.01 * step})[0];
    for (size_t i = 0; i < n; ++i) {
      values[1][i] = rounded(dtype, random_values(dtype, testing::count_of(shapes[i]),
                                                  seed + 1000 + static_cast<uint32_t>(step) * 17 + static_cast<uint32_t>(i)));
      reference_values[1][i] = values[1][i];
    }
    std::vector<Tensor> inputs = {make_tensor(r_dtype, {R}, {}), Tensor::scalar<int64_t>(T)};
    for (size_t role = 0; role < 2 + num_state; ++role) {
      for (size_t i = 0; i < n; ++i) inputs.push_back(make_tensor(dtype, values[role][i], shapes[i]));
    }
    std::vector<Tensor> outputs = run_training(op, inputs, attributes, (1 + num_state) * n);
    ASSERT_EQ(outputs.size(), (1 + num_state) * n);

    for (size_t i = 0; i < n; ++i) {
      std::vector<double>& x = reference_values[0][i];
      for (size_t e = 0; e < x.size(); ++e) {
        std::vector<double> state(num_state);
        for (size_t s = 0; s < num_state; ++s) state[s] = reference_values[2 + s][i][e];
        reference(R, T, x[e], reference_values[1][i][e], state);
        for (size_t s = 0; s < num_state; ++s) reference_values[2 + s][i][e] = state[s];
      }
    }
    for (size_t slot = 0; slot < 1 + num_state; ++slot) {
      const size_t role = slot == 0 ? 0 : slot + 1;
      for (size_t i = 0; i < n; ++i) {
        const Tensor& out = outputs[slot * n + i];
        ASSERT_EQ(out.dtype(), dtype);
        ASSERT_EQ(out.sizes(), shapes[i]);
        std::vector<double> got = to_doubles(out);
        const std::vector<double>& want = reference_values[role][i];
        for (size_t e = 0; e < want.size(); ++e) {
          ASSERT_NEAR(got[e], want[e], tolerance * (1 + std::abs(want[e])))
              << "step " << step << " (T " << T << ") output " << slot * n + i << " element " << e;
        }
        values[role][i] = got;
      }
    }
  }
}

const std::vector<std::vector<int64_t>> kShapes = {{3, 4}, {5}, {}, {2, 1, 3}};

TEST(OnnxTrainingOpsTest, AdagradMatchesReference) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    check_steps("Adagrad", {{"decay_factor", 0.1}, {"epsilon", 1e-5}, {"norm_coefficient", 0.01}},
                adagrad_reference(0.1, 1e-5, 0.01), 1, dtype, dtype, kShapes, 4, 0, 1);
    check_steps("Adagrad", {{"decay_factor", 0.5}, {"norm_coefficient", 0.2}}, adagrad_reference(0.5, static_cast<double>(1e-6f), 0.2), 1,
                dtype, dtype, {{7}}, 3, 1, 2);
  }
}

TEST(OnnxTrainingOpsTest, AdagradDefaults) {
  // decay_factor 0 (the rate does not decay with T), epsilon 1e-6 (f32), no regularization.
  check_steps("Adagrad", {}, adagrad_reference(0.0, static_cast<double>(1e-6f), 0.0), 1, DType::kFloat64,
              DType::kFloat64, {{4}, {2, 2}}, 3, 5, 3);
}

TEST(OnnxTrainingOpsTest, AdamMatchesReference) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    check_steps("Adam",
                {{"alpha", 0.85}, {"beta", 0.95}, {"epsilon", 1e-4}, {"norm_coefficient", 0.02},
                 {"norm_coefficient_post", 0.01}},
                adam_reference(0.85, 0.95, 1e-4, 0.02, 0.01), 2, dtype, dtype, kShapes, 4, 0, 4);
  }
}

TEST(OnnxTrainingOpsTest, AdamDefaults) {
  // alpha 0.9, beta 0.999, epsilon 1e-6 (their f32 values), no regularization.
  check_steps("Adam", {},
              adam_reference(static_cast<double>(0.9f), static_cast<double>(0.999f), static_cast<double>(1e-6f), 0, 0), 2,
              DType::kFloat64, DType::kFloat64, {{3}, {2, 3}}, 3, 1, 5);
}

TEST(OnnxTrainingOpsTest, MomentumStandardAndNesterov) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const char* mode : {"standard", "nesterov"}) {
      SCOPED_TRACE(mode);
      // beta is ignored at T = 0 (the first step) and used afterwards.
      check_steps("Momentum", {{"alpha", 0.9}, {"beta", 0.3}, {"mode", mode}, {"norm_coefficient", 0.05}},
                  momentum_reference(0.9, 0.3, 0.05, std::string(mode) == "nesterov"), 1, dtype, dtype, kShapes, 4, 0,
                  6);
    }
  }
}

TEST(OnnxTrainingOpsTest, LearningRateTypeMayDifferFromTheTensors) {
  check_steps("Momentum", {{"alpha", 0.5}, {"beta", 0.7}, {"mode", "nesterov"}, {"norm_coefficient", 0.0}},
              momentum_reference(0.5, 0.7, 0.0, true), 1, DType::kFloat32, DType::kFloat64, {{6}, {2, 2}}, 2, 0, 7);
  check_steps("Adagrad", {{"norm_coefficient", 0.1}}, adagrad_reference(0.0, static_cast<double>(1e-6f), 0.1), 1, DType::kFloat64,
              DType::kFloat32, {{5}}, 2, 0, 8);
}

TEST(OnnxTrainingOpsTest, ComputesTheOnnxExampleOfAdagrad) {
  // ONNX's example: R 0.1, T 0, X 1, G -1, H 2, decay 0.1, epsilon 1e-5, norm 0.001.
  std::vector<Tensor> outputs = run_training(
      "Adagrad",
      {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(0), make_tensor(DType::kFloat32, {1}, {1}),
       make_tensor(DType::kFloat32, {-1}, {1}), make_tensor(DType::kFloat32, {2}, {1})},
      {{"decay_factor", 0.1}, {"epsilon", 1e-5}, {"norm_coefficient", 0.001}}, 2);
  double g = 0.001 * 1 - 1, h = 2 + g * g;
  EXPECT_NEAR(to_doubles(outputs[1])[0], h, 1e-6);
  EXPECT_NEAR(to_doubles(outputs[0])[0], 1 - 0.1 * g / (std::sqrt(h) + 1e-5), 1e-6);
}

TEST(OnnxTrainingOpsTest, TrailingOutputsMayBeLeftOut) {
  // Only the new X_1 and X_2 of Adam: the same values as with every output.
  std::vector<Tensor> inputs = {Tensor::scalar<double>(0.1), Tensor::scalar<int64_t>(3)};
  std::vector<std::vector<int64_t>> shapes = {{4}, {2, 3}};
  for (uint32_t role = 0; role < 4; ++role) {
    for (size_t i = 0; i < 2; ++i) {
      inputs.push_back(make_tensor(DType::kFloat64, random_values(DType::kFloat64, testing::count_of(shapes[i]), 20 + role * 2 + static_cast<uint32_t>(i), role == 3 ? 0.0 : -1.0, 1.0), shapes[i]));
    }
  }
  Attributes attributes = {{"norm_coefficient_post", 0.1}};
  std::vector<Tensor> all = run_training("Adam", inputs, attributes, 6);
  std::vector<Tensor> first = run_training("Adam", inputs, attributes, 2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(to_doubles(first[0]), to_doubles(all[0]));
  EXPECT_EQ(to_doubles(first[1]), to_doubles(all[1]));
}

Tensor f32(const std::vector<int64_t>& sizes, uint32_t seed = 1) {
  return make_tensor(DType::kFloat32, random_values(DType::kFloat32, testing::count_of(sizes), seed, 0.0, 1.0), sizes);
}

TEST(OnnxTrainingOpsTest, InputsMustSplitIntoGroups) {
  Tensor r = Tensor::scalar<float>(0.1f), t = Tensor::scalar<int64_t>(0);
  // Adam takes X, G, V, H per tensor: 6 tensors after R and T are not whole groups.
  std::vector<Tensor> adam = {r, t, f32({2}), f32({2}), f32({2}), f32({2}), f32({2}), f32({2})};
  std::string message = error_message([&] { run_training("Adam", adam, {}, 2); });
  EXPECT_NE(message.find("6 inputs after R and T; expected a positive multiple of 4 (X..., G..., V..., H..."),
            std::string::npos)
      << message;
  message = error_message([&] { run_kernel_only("Adam", adam, {}, 2); });
  EXPECT_NE(message.find("expected a positive multiple of 4"), std::string::npos) << message;
  // Adagrad: X, G, H per tensor.
  message = error_message([&] { run_training("Adagrad", {r, t, f32({2}), f32({2})}, {}, 1); });
  EXPECT_NE(message.find("2 inputs after R and T; expected a positive multiple of 3 (X..., G..., H..."),
            std::string::npos)
      << message;
  // No tensors at all.
  message = error_message([&] {
    run_training("Momentum", {r, t, f32({1})}, {{"alpha", 0.9}, {"beta", 1.0}, {"mode", "standard"}, {"norm_coefficient", 0.0}}, 1);
  });
  EXPECT_NE(message.find("expected a positive multiple of 3 (X..., G..., V..."), std::string::npos) << message;
}

TEST(OnnxTrainingOpsTest, RAndTMustBeScalars) {
  std::vector<Tensor> group = {f32({3}), f32({3}), f32({3})};
  auto with = [&](Tensor r, Tensor t) {
    std::vector<Tensor> inputs = {std::move(r), std::move(t)};
    inputs.insert(inputs.end(), group.begin(), group.end());
    return inputs;
  };
  std::vector<Tensor> bad_r = with(make_tensor(DType::kFloat32, {0.1, 0.2}, {2}), Tensor::scalar<int64_t>(0));
  std::string message = error_message([&] { run_training("Adagrad", bad_r, {}, 2); });
  EXPECT_NE(message.find("R must be a scalar, got f32[2]"), std::string::npos) << message;
  message = error_message([&] { run_kernel_only("Adagrad", bad_r, {}, 2); });
  EXPECT_NE(message.find("R must be a scalar, got f32[2]"), std::string::npos) << message;

  std::vector<Tensor> bad_t = with(Tensor::scalar<float>(0.1f), make_tensor(DType::kInt64, {0, 1}, {2}));
  message = error_message([&] { run_kernel_only("Adagrad", bad_t, {}, 2); });
  EXPECT_NE(message.find("T must be an i64 scalar, got i64[2]"), std::string::npos) << message;
  std::vector<Tensor> i32_t = with(Tensor::scalar<float>(0.1f), Tensor::scalar<int32_t>(0));
  message = error_message([&] { run_kernel_only("Adagrad", i32_t, {}, 2); });
  EXPECT_NE(message.find("T must be an i64 scalar, got i32[]"), std::string::npos) << message;
}

TEST(OnnxTrainingOpsTest, GroupsMustMatchTheirTensor) {
  Tensor r = Tensor::scalar<float>(0.1f), t = Tensor::scalar<int64_t>(1);
  // X_2 is [2]; H_2 is [3].
  std::vector<Tensor> inputs = {r, t, f32({4}), f32({2}), f32({4}), f32({2}), f32({4}), f32({3})};
  std::string message = error_message([&] { run_training("Adagrad", inputs, {}, 4); });
  EXPECT_NE(message.find("H_2 has shape [3]; X_2 has [2]"), std::string::npos) << message;
  message = error_message([&] { run_kernel_only("Adagrad", inputs, {}, 4); });
  EXPECT_NE(message.find("H_2 is f32[3]; expected f32 of X_2's shape [2]"), std::string::npos) << message;
  // Every tensor shares one type.
  std::vector<Tensor> mixed = {r, t, f32({4}), f32({4}),
                               make_tensor(DType::kFloat64, {0, 0, 0, 0}, {4})};
  message = error_message([&] { run_training("Adagrad", mixed, {}, 2); });
  EXPECT_NE(message.find("H_1 is f64[4]; every optimized tensor, gradient and state must have X_1's type f32"),
            std::string::npos)
      << message;
}

TEST(OnnxTrainingOpsTest, OutputCountAndModeAreChecked) {
  Tensor r = Tensor::scalar<float>(0.1f), t = Tensor::scalar<int64_t>(1);
  std::vector<Tensor> one = {r, t, f32({2}), f32({2}), f32({2})};
  Attributes momentum = {{"alpha", 0.9}, {"beta", 1.0}, {"mode", "standard"}, {"norm_coefficient", 0.0}};
  std::string message = error_message([&] { run_training("Momentum", one, momentum, 3); });
  EXPECT_NE(message.find("has 3 outputs; expected at most 2 outputs (the new X..., V... of 1 optimized tensors)"),
            std::string::npos)
      << message;
  momentum["mode"] = Attribute("heavy-ball");
  message = error_message([&] { run_training("Momentum", one, momentum, 2); });
  EXPECT_NE(message.find("mode must be \"standard\" or \"nesterov\", got \"heavy-ball\""), std::string::npos) << message;
  momentum.erase("mode");
  message = error_message([&] { run_training("Momentum", one, momentum, 2); });
  EXPECT_NE(message.find("mode"), std::string::npos) << message;
}

TEST(OnnxTrainingOpsTest, LivesInThePreviewDomain) {
  const OpSchema* adam = default_op_registry().find("Adam", kOnnxTrainingDomain);
  ASSERT_NE(adam, nullptr);
  EXPECT_NE(adam->find_attr("norm_coefficient_post"), nullptr);
  // Weir's own Adam (in place, default domain) is a different op.
  const OpSchema* own = default_op_registry().find("Adam");
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->find_attr("norm_coefficient_post"), nullptr);
}

}  // namespace
}  // namespace weir
