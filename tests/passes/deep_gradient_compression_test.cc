// Deep gradient compression (passes/collectives/deep_gradient_compression.h)
// on in-process worlds, against a plain reference of the semantics written
// here: a linear model whose gradients are known in closed form, so every
// rank's momentum correction U, local accumulation V, sampled threshold,
// top-k pairs, masking, and the sum of every rank's pairs into a plain SGD
// step can be recomputed by hand. Before the ramp the step is exactly dense
// data parallelism with Momentum; the 16384-element and dtype exclusions;
// the combinations DGC excludes are refused naming both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/type_inference.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/optim/optimizer.h"
#include "ops/register_ops.h"
#include "passes/collectives/deep_gradient_compression.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "tests/test_util.h"

namespace weir {
namespace {

constexpr int64_t kIn = 128, kOut = 128;  // W is 16384 elements: compressed; b (128) is not
constexpr int64_t kBatch = 4;             // one rank's
constexpr double kLr = 0.1, kMomentum = 0.9;

// loss = mean((x W + b) * t): dL/dW = x^T t / (B * out), dL/db = sum_b t / (B * out).
struct Linear {
  std::unique_ptr<Graph> graph;
  TrainingGraph training;
  std::shared_ptr<const Plan> plan;
};

Linear linear_step(const Strategy& strategy, OptimizerKind kind = OptimizerKind::kMomentum) {
  GraphBuilder b("linear", 3);
  Var x = b.input("x", {DType::kFloat32, Shape{kBatch, kIn}});
  Var t = b.input("t", {DType::kFloat32, Shape{kBatch, kOut}});
  Var w = b.parameter("w", Tensor::from_vector(testing::random_floats(kIn * kOut, 11, -0.5f, 0.5f), {kIn, kOut}));
  Var bias = b.parameter("b", Tensor::from_vector(testing::random_floats(kOut, 12, -0.5f, 0.5f), {kOut}));
  Var y = b.op("Add", {b.op("MatMul", {x, w}), bias});
  Var loss = b.op("ReduceMean", {b.op("Mul", {y, t})}, {{"keepdims", Attribute(int64_t{0})}}, "loss");
  b.output(loss);
  const std::string loss_name = loss.name();
  Linear step;
  step.graph = b.finish();
  step.training = minimize(*step.graph, loss_name, {.kind = kind, .momentum = kMomentum}, strategy);
  step.plan = compile(*step.graph);
  return step;
}

Strategy dgc_strategy(int ranks, int begin, int rampup, std::vector<double> sparsity) {
  Strategy strategy;
  strategy.data_parallel.ranks = ranks;
  strategy.dgc = {.enabled = true, .rampup_begin_step = begin, .rampup_step = rampup, .sparsity = std::move(sparsity),
                  .clip_norm = 0};
  return strategy;
}

struct Feeds {
  std::vector<float> x, t;  // the whole batch, rank r's rows [r*B, (r+1)*B)
};

Feeds feeds_of(int ranks, int step) {
  return {testing::random_floats(static_cast<size_t>(ranks * kBatch * kIn), 100 + static_cast<uint32_t>(step), -1.0f, 1.0f),
          testing::random_floats(static_cast<size_t>(ranks * kBatch * kOut), 200 + static_cast<uint32_t>(step), -1.0f, 1.0f)};
}

std::vector<std::map<std::string, Tensor>> rank_feeds(const Feeds& f, int ranks, int step) {
  std::vector<std::map<std::string, Tensor>> out;
  for (int r = 0; r < ranks; ++r) {
    const auto x0 = f.x.begin() + r * kBatch * kIn, t0 = f.t.begin() + r * kBatch * kOut;
    out.push_back({{"x", Tensor::from_vector(std::vector<float>(x0, x0 + kBatch * kIn), {kBatch, kIn})},
                   {"t", Tensor::from_vector(std::vector<float>(t0, t0 + kBatch * kOut), {kBatch, kOut})},
                   {"lr", Tensor::scalar(static_cast<float>(kLr))},
                   {"step", Tensor::scalar<int64_t>(step)}});
  }
  return out;
}

// Rank r's gradient of W, in closed form.
std::vector<double> w_gradient(const Feeds& f, int r) {
  std::vector<double> g(static_cast<size_t>(kIn * kOut), 0.0);
  for (int64_t n = 0; n < kBatch; ++n) {
    const float* x = f.x.data() + (r * kBatch + n) * kIn;
    const float* t = f.t.data() + (r * kBatch + n) * kOut;
    for (int64_t i = 0; i < kIn; ++i) {
      for (int64_t j = 0; j < kOut; ++j) g[static_cast<size_t>(i * kOut + j)] += double(x[i]) * t[j] / (kBatch * kOut);
    }
  }
  return g;
}

// The sampled threshold, from DISTRIBUTED.md's definition.
double threshold_of(const std::vector<float>& v, int64_t k) {
  const int64_t n = static_cast<int64_t>(v.size());
  const int64_t r = std::max<int64_t>(1, std::min<int64_t>(32, k / 2));
  const double f = static_cast<double>(k) / static_cast<double>(n);
  const int64_t blocks = std::min<int64_t>(16, n);
  double sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * n / blocks, end = (b + 1) * n / blocks, length = end - begin;
    const int64_t samples = std::min(length, std::max(r, static_cast<int64_t>(std::ceil(static_cast<double>(r) / f))));
    const int64_t stride = std::max<int64_t>(1, length / samples);
    std::vector<float> picked;
    for (int64_t j = 0; j < samples; ++j) picked.push_back(std::fabs(v[static_cast<size_t>(begin + j * stride)]));
    std::sort(picked.begin(), picked.end(), std::greater<float>());
    sum += picked[static_cast<size_t>(std::min(r, samples) - 1)];
  }
  return sum / static_cast<double>(blocks);
}

TEST(DeepGradientCompression, MatchesAPlainReferenceThroughTheRamp) {
  constexpr int kRanks = 3, kBegin = 2, kRamp = 4, kSteps = 9;
  const std::vector<double> sparsity = {0.75, 0.9, 0.99};
  Linear dgc = linear_step(dgc_strategy(kRanks, kBegin, kRamp, sparsity));
  EXPECT_EQ(dgc.training.dgc_parameters, std::vector<std::string>{"w"});
  InProcessRanks world(dgc.plan, kRanks);

  const int64_t n = kIn * kOut;
  std::vector<float> w(static_cast<size_t>(n));
  std::memcpy(w.data(), world.session(0).state("w").data<float>(), sizeof(float) * static_cast<size_t>(n));
  std::vector<std::vector<float>> u(kRanks, std::vector<float>(static_cast<size_t>(n), 0.0f)), v = u;
  for (int step = 1; step <= kSteps; ++step) {
    const Feeds f = feeds_of(kRanks, step);
    world.run(rank_feeds(f, kRanks, step));
    std::vector<std::vector<double>> g;
    for (int r = 0; r < kRanks; ++r) g.push_back(w_gradient(f, r));
    const int64_t dgc_step = step - 1;
    if (dgc_step < kBegin) {  // dense: Momentum on the averaged gradient
      for (int64_t i = 0; i < n; ++i) {
        double mean = 0;
        for (int r = 0; r < kRanks; ++r) mean += g[static_cast<size_t>(r)][static_cast<size_t>(i)];
        mean /= kRanks;
        const float velocity = static_cast<float>(kMomentum * u[0][static_cast<size_t>(i)] + mean);
        for (int r = 0; r < kRanks; ++r) u[static_cast<size_t>(r)][static_cast<size_t>(i)] = velocity;
        w[static_cast<size_t>(i)] -= static_cast<float>(kLr * velocity);
      }
    } else {
      const size_t stage = std::min<size_t>(sparsity.size() - 1, static_cast<size_t>((dgc_step - kBegin) * 3 / kRamp));
      const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(std::floor(n * (1 - sparsity[stage]))));
      std::vector<double> sum(static_cast<size_t>(n), 0.0);
      for (int r = 0; r < kRanks; ++r) {
        std::vector<float>& ur = u[static_cast<size_t>(r)];
        std::vector<float>& vr = v[static_cast<size_t>(r)];
        for (int64_t i = 0; i < n; ++i) {
          ur[static_cast<size_t>(i)] = static_cast<float>(kMomentum * ur[static_cast<size_t>(i)] + g[static_cast<size_t>(r)][static_cast<size_t>(i)]);
          vr[static_cast<size_t>(i)] = static_cast<float>(double(vr[static_cast<size_t>(i)]) + ur[static_cast<size_t>(i)]);
        }
        const double threshold = threshold_of(vr, k);
        std::vector<int64_t> above;
        for (int64_t i = 0; i < n; ++i) {
          if (std::fabs(vr[static_cast<size_t>(i)]) > threshold) above.push_back(i);
        }
        std::stable_sort(above.begin(), above.end(), [&](int64_t a, int64_t b) {
          return std::fabs(vr[static_cast<size_t>(a)]) > std::fabs(vr[static_cast<size_t>(b)]);
        });
        if (static_cast<int64_t>(above.size()) > k) above.resize(static_cast<size_t>(k));
        ASSERT_FALSE(above.empty()) << "step " << step << " rank " << r;
        for (int64_t i : above) {
          sum[static_cast<size_t>(i)] += vr[static_cast<size_t>(i)];
          ur[static_cast<size_t>(i)] = vr[static_cast<size_t>(i)] = 0.0f;
        }
      }
      for (int64_t i = 0; i < n; ++i) w[static_cast<size_t>(i)] -= static_cast<float>(kLr * sum[static_cast<size_t>(i)] / kRanks);
    }
    for (int r = 0; r < kRanks; ++r) {
      const float* got_w = world.session(r).state("w").data<float>();
      const float* got_u = world.session(r).state("w/velocity").data<float>();
      const float* got_v = world.session(r).state("w/dgc_v").data<float>();
      for (int64_t i = 0; i < n; ++i) {
        const auto at = static_cast<size_t>(i);
        ASSERT_NEAR(got_w[i], w[at], 1e-5 * (1 + std::fabs(w[at]))) << "w step " << step << " rank " << r << " element " << i;
        ASSERT_NEAR(got_u[i], u[static_cast<size_t>(r)][at], 1e-5) << "U step " << step << " rank " << r << " element " << i;
        ASSERT_NEAR(got_v[i], v[static_cast<size_t>(r)][at], 1e-5) << "V step " << step << " rank " << r << " element " << i;
      }
    }
  }
}

TEST(DeepGradientCompression, BeforeTheRampItIsDenseDataParallelism) {
  Strategy dense;
  dense.data_parallel.ranks = 2;
  Linear plain = linear_step(dense);
  Linear dgc = linear_step(dgc_strategy(2, 3, 1, {0.999}));
  InProcessRanks plain_world(plain.plan, 2), dgc_world(dgc.plan, 2);
  for (int step = 1; step <= 3; ++step) {
    const Feeds f = feeds_of(2, step);
    std::vector<std::map<std::string, Tensor>> feeds = rank_feeds(f, 2, step);
    dgc_world.run(feeds);
    for (auto& rank : feeds) rank.erase("step");
    plain_world.run(feeds);
    for (const char* name : {"w", "b", "w/velocity", "b/velocity"}) {
      const Tensor a = plain_world.session(0).state(name), b = dgc_world.session(1).state(name);
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << name << " step " << step;
    }
  }
}

TEST(DeepGradientCompression, ChoosesLargeF32ParametersOnly) {
  Graph g("params");
  g.add_persistent("large", {DType::kFloat32, Shape{128, 128}}, PersistentRole::kParameter, Tensor(DType::kFloat32, {128, 128}));
  g.add_persistent("small", {DType::kFloat32, Shape{16383}}, PersistentRole::kParameter, Tensor(DType::kFloat32, {16383}));
  g.add_persistent("double", {DType::kFloat64, Shape{20000}}, PersistentRole::kParameter, Tensor(DType::kFloat64, {20000}));
  g.add_persistent("shard", {DType::kFloat32, Shape{20000}}, PersistentRole::kParameter, Tensor(DType::kFloat32, {20000}));
  EXPECT_EQ(dgc_parameters(g, {"large", "small", "double", "shard"}, {"shard"}), std::vector<std::string>{"large"});
}

TEST(DeepGradientCompression, ExcludedCombinationsAreRefusedNamingBoth) {
  auto message = [](const Strategy& strategy, OptimizerKind kind) {
    try {
      linear_step(strategy, kind);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = message(dgc_strategy(2, 0, 1, {0.999}), OptimizerKind::kAdam);
  EXPECT_NE(m.find("dgc needs the Momentum optimizer"), std::string::npos) << m;
  Strategy half = dgc_strategy(2, 0, 1, {0.999});
  half.communication.allreduce_dtype = DType::kFloat16;
  m = message(half, OptimizerKind::kMomentum);
  EXPECT_NE(m.find("dgc with fp16_allreduce"), std::string::npos) << m;
}

}  // namespace
}  // namespace weir
