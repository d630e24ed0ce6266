// Optimizer updates against a step-by-step reference over several steps
// (the parameter and state are updated in place, and the outputs alias
// them), and ClipByGlobalNorm against the norm computed by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;

struct State {
  std::vector<double> p, m, v;
};

// One reference step of `rule` on every element.
void reference_step(const std::string& rule, State& s, const std::vector<double>& g, double lr, int step,
                    const std::map<std::string, double>& a) {
  auto get = [&](const char* name, double fallback) { return a.count(name) ? a.at(name) : fallback; };
  double wd = get("weight_decay", 0), mu = get("momentum", 0.9), b1 = get("beta1", 0.9), b2 = get("beta2", 0.999);
  double eps = get("epsilon", rule == "LAMB" || rule == "Adagrad" ? 1e-6 : 1e-8);
  bool nesterov = get("nesterov", 0) != 0;
  std::vector<double> r(s.p.size());
  for (size_t i = 0; i < s.p.size(); ++i) {
    if (rule == "SGD") {
      r[i] = g[i] + wd * s.p[i];
    } else if (rule == "Momentum") {
      double grad = g[i] + wd * s.p[i];
      s.m[i] = mu * s.m[i] + grad;
      r[i] = nesterov ? grad + mu * s.m[i] : s.m[i];
    } else if (rule == "Adagrad") {
      double grad = g[i] + wd * s.p[i];
      s.m[i] += grad * grad;
      r[i] = grad / (std::sqrt(s.m[i]) + eps);
    } else {
      double grad = rule == "Adam" ? g[i] + wd * s.p[i] : g[i];
      s.m[i] = b1 * s.m[i] + (1 - b1) * grad;
      s.v[i] = b2 * s.v[i] + (1 - b2) * grad * grad;
      double m_hat = s.m[i] / (1 - std::pow(b1, step)), v_hat = s.v[i] / (1 - std::pow(b2, step));
      r[i] = m_hat / (std::sqrt(v_hat) + eps) + (rule == "Adam" ? 0 : wd * s.p[i]);
    }
  }
  double trust = 1;
  if (rule == "LAMB") {
    double pn = 0, rn = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      pn += s.p[i] * s.p[i];
      rn += r[i] * r[i];
    }
    trust = std::sqrt(pn) / std::sqrt(rn);
  }
  for (size_t i = 0; i < r.size(); ++i) s.p[i] -= lr * trust * r[i];
}

TEST(OptimizerKernels, UpdatesMatchTheReferenceOverSeveralSteps) {
  struct Case {
    std::string rule;
    std::map<std::string, double> attrs;
  };
  const std::vector<Case> cases = {
      {"SGD", {}}, {"SGD", {{"weight_decay", 0.1}}}, {"Momentum", {{"momentum", 0.8}}},
      {"Momentum", {{"nesterov", 1}, {"weight_decay", 0.01}}}, {"Adagrad", {}},
      {"Adagrad", {{"weight_decay", 0.1}, {"epsilon", 1e-3}}}, {"Adam", {}}, {"Adam", {{"weight_decay", 0.05}}},
      {"AdamW", {{"weight_decay", 0.1}, {"beta1", 0.8}}}, {"LAMB", {{"weight_decay", 0.01}}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    for (DType dtype : {DType::kFloat64, DType::kFloat32}) {
      const int64_t n = 23;
      State s{random_values(DType::kFloat64, n, seed++), std::vector<double>(n), std::vector<double>(n)};
      if (dtype == DType::kFloat32) s.p = to_doubles(make_tensor(dtype, s.p, {n}));
      Tensor p = make_tensor(dtype, s.p, {n}), m = make_tensor(dtype, s.m, {n}), v = make_tensor(dtype, s.v, {n});
      std::map<std::string, Attribute> attrs;
      for (auto& [name, value] : c.attrs) {
        attrs[name] = name == "nesterov" ? Attribute(static_cast<int64_t>(value)) : Attribute(value);
      }
      for (int step = 1; step <= 4; ++step) {
        std::vector<double> g = random_values(DType::kFloat64, n, seed++);
        if (dtype == DType::kFloat32) g = to_doubles(make_tensor(dtype, g, {n}));
        Tensor grad = make_tensor(dtype, g, {n});
        Tensor lr = Tensor::scalar<float>(0.05f);
        std::vector<Tensor> inputs = {p, grad};
        size_t outputs = 1;
        if (c.rule == "Momentum" || c.rule == "Adagrad") {
          inputs.push_back(m);
          outputs = 2;
        } else if (c.rule != "SGD") {
          inputs.push_back(m);
          inputs.push_back(v);
          outputs = 3;
        }
        inputs.push_back(lr);
        if (outputs == 3) inputs.push_back(Tensor::scalar<int64_t>(step));
        std::vector<Tensor> out = run_op(c.rule, inputs, attrs, outputs);
        EXPECT_EQ(out[0].raw_data(), p.raw_data()) << c.rule << ": the parameter is updated in place";
        reference_step(c.rule, s, g, static_cast<double>(0.05f), step, c.attrs);
        std::vector<double> got = to_doubles(p);
        double tol = dtype == DType::kFloat64 ? 1e-12 : 2e-6;
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_NEAR(got[static_cast<size_t>(i)], s.p[static_cast<size_t>(i)], tol)
              << c.rule << " " << dtype_name(dtype) << " step " << step << " element " << i;
        }
        if (dtype == DType::kFloat32) s.p = got;  // follow the f32 rounding
      }
    }
  }
}

TEST(OptimizerKernels, BadInputsAreNamed) {
  Tensor p(DType::kFloat32, {3}), g(DType::kFloat32, {4}), m(DType::kFloat32, {3});
  EXPECT_THROW(run_op("SGD", {p, g, Tensor::scalar<float>(0.1f)}), Error);
  try {
    run_op("Adam", {p, Tensor(DType::kFloat32, {3}), m, Tensor(DType::kFloat32, {3}), Tensor::scalar<float>(0.1f),
                    Tensor::scalar<int64_t>(0)}, {}, 3);
    FAIL() << "step 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step must be at least 1"), std::string::npos) << e.what();
  }
  // The update loops assume separate buffers: one tensor as both moments is refused.
  try {
    run_op("Adam", {p, Tensor(DType::kFloat32, {3}), m, m, Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(1)}, {}, 3);
    FAIL() << "shared moments accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("share memory"), std::string::npos) << e.what();
  }
}

TEST(OptimizerKernels, ClipByGlobalNormScalesOnlyAboveTheLimit) {
  std::vector<double> a = random_values(DType::kFloat32, 6, 3), b = random_values(DType::kFloat32, 4, 4);
  Tensor ta = make_tensor(DType::kFloat32, a, {2, 3}), tb = make_tensor(DType::kFloat32, b, {4});
  double squares = 0;
  for (double x : to_doubles(ta)) squares += x * x;
  for (double x : to_doubles(tb)) squares += x * x;
  double norm = std::sqrt(squares);
  std::vector<Tensor> clipped = run_op("ClipByGlobalNorm", {ta, tb}, {{"max_norm", Attribute(norm / 2)}}, 3);
  EXPECT_NEAR(to_doubles(clipped[2])[0], norm, 1e-4);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(to_doubles(clipped[0])[i], to_doubles(ta)[i] / 2, 1e-5);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(to_doubles(clipped[1])[i], to_doubles(tb)[i] / 2, 1e-5);
  std::vector<Tensor> kept = run_op("ClipByGlobalNorm", {ta, tb}, {{"max_norm", Attribute(norm * 2)}}, 3);
  EXPECT_EQ(to_doubles(kept[0]), to_doubles(ta));
}

}  // namespace
}  // namespace weir
