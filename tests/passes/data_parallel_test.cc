// Data-parallel rewrite (passes/collectives/data_parallel): N replicas on N
// virtual CPU devices, each on its share of the batch, train like one device
// on the whole batch; recompute and AMP compose with it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "passes/collectives/data_parallel.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace weir {
namespace {

struct Step {
  models::ClassifierGraph graph;
  TrainingGraph training;
  std::shared_ptr<const Plan> plan;
};

// An MLP on 8x8 images; `batch` is one replica's.
Step mlp_step(int64_t batch, int64_t layers, int64_t width, double dropout, const Strategy& strategy,
              OptimizerKind kind) {
  models::ZooOptions zoo;
  zoo.mlp_layers = layers;
  zoo.mlp_width = width;
  zoo.mlp_dropout = dropout;
  zoo.image_size = 8;
  Step step{models::build_classifier("mlp", batch, /*training=*/true, zoo), {}, nullptr};
  step.training = minimize(*step.graph.graph, step.graph.loss, {.kind = kind}, strategy);
  CompileOptions options;
  options.devices = step.training.devices;
  step.plan = compile(*step.graph.graph, options);
  return step;
}

Strategy data_parallel(int replicas) {
  Strategy strategy;
  strategy.data_parallel.replicas = replicas;
  return strategy;
}

std::map<std::string, Tensor> feeds_for(int64_t batch, int step, bool adam) {
  Tensor x = Tensor::from_vector(
      testing::random_floats(static_cast<size_t>(batch * 64), 70 + static_cast<uint32_t>(step), 0.0f, 1.0f), {batch, 1, 8, 8});
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<size_t>(i)] = (i * 3 + step) % 10;
  std::map<std::string, Tensor> feeds = {{"x", x}, {"labels", Tensor::from_vector(labels, {batch})},
                                         {"lr", Tensor::scalar(0.05f)}};
  if (adam) feeds["step"] = Tensor::scalar<int64_t>(step + 1);
  return feeds;
}

// Runs both steps `steps` times on the same whole batches; returns the
// largest relative difference of losses and parameters.
double train_and_compare(Step& a, Step& b, int64_t batch, int steps, bool adam) {
  Session sa(a.plan), sb(b.plan);
  double worst = 0;
  for (int i = 0; i < steps; ++i) {
    auto feeds = feeds_for(batch, i, adam);
    float la = sa.run(feeds)[0].data<float>()[0];
    float lb = sb.run(feeds)[0].data<float>()[0];
    EXPECT_TRUE(std::isfinite(la) && std::isfinite(lb));
    worst = std::max(worst, std::abs(static_cast<double>(la) - lb) / std::max(std::abs(static_cast<double>(la)), 1e-30));
  }
  EXPECT_EQ(a.training.parameters, b.training.parameters);
  for (const std::string& name : a.training.parameters) {
    worst = std::max(worst, testing::relative_l2(sa.state(name), sb.state(name)));
  }
  return worst;
}

TEST(DataParallel, ReplicasTrainLikeOneDeviceOnTheWholeBatch) {
  const int64_t batch = 32;
  Step whole = mlp_step(batch, 3, 32, 0.0, {}, OptimizerKind::kSgd);
  Step split = mlp_step(batch / 4, 3, 32, 0.0, data_parallel(4), OptimizerKind::kSgd);
  ASSERT_EQ(split.training.devices.size(), 4u);
  EXPECT_EQ(split.training.replicas, 4);
  // One AllReduce per gradient and one for the loss, on each replica.
  EXPECT_EQ(split.training.allreduces, 4 * static_cast<int>(split.training.parameters.size() + 1));

  const Graph& g = *split.graph.graph;
  EXPECT_EQ(g.find_value("x")->shape(), (Shape{batch, 1, 8, 8}));
  int updates = 0;
  for (const Node* node : g.nodes()) {
    if (node->op_type() == "SGD") {
      ++updates;
      EXPECT_EQ(*node->device(), Device::cpu(0)) << node->name();
      EXPECT_EQ(node->input(1)->producer()->op_type(), "AllReduce") << node->name();
    }
    if (node->name().rfind("replica3/", 0) == 0) {
      EXPECT_EQ(*node->device(), Device::cpu(3)) << node->name();
    }
  }
  EXPECT_EQ(updates, static_cast<int>(split.training.parameters.size()));
  EXPECT_EQ(g.outputs().front()->name(), "loss");
  EXPECT_EQ(g.outputs().front()->producer()->op_type(), "AllReduce");

  // The same sums in another order: equal within f32 rounding.
  double sgd = train_and_compare(whole, split, batch, 3, /*adam=*/false);
  std::printf("4 replicas vs one device, 3 SGD steps: largest relative difference %.3g\n", sgd);
  EXPECT_LT(sgd, 1e-5);

  Step whole_adam = mlp_step(batch, 3, 32, 0.0, {}, OptimizerKind::kAdam);
  Step split_adam = mlp_step(batch / 2, 3, 32, 0.0, data_parallel(2), OptimizerKind::kAdam);
  double adam = train_and_compare(whole_adam, split_adam, batch, 3, /*adam=*/true);
  std::printf("2 replicas vs one device, 3 Adam steps: largest relative difference %.3g\n", adam);
  EXPECT_LT(adam, 1e-5);
}

TEST(DataParallel, OtherOutputsAreConcatenatedRowsOrAveragedScalars) {
  // The logits as a second output: each replica's rows, concatenated in order.
  auto with_logits = [](int64_t batch, const Strategy& strategy) {
    models::ZooOptions zoo;
    zoo.image_size = 8;
    models::ClassifierGraph c = models::build_classifier("mlp", batch, /*training=*/true, zoo);
    for (Node* node : c.graph->nodes()) {
      if (node->op_type() == "SoftmaxCrossEntropyLoss") c.graph->add_output(node->input(0));
    }
    TrainingGraph t = minimize(*c.graph, c.loss, {.kind = OptimizerKind::kSgd}, strategy);
    CompileOptions options;
    options.devices = t.devices;
    return compile(*c.graph, options);
  };
  Session whole(with_logits(12, {})), split(with_logits(4, data_parallel(3)));
  auto feeds = feeds_for(12, 0, false);
  std::vector<Tensor> a = whole.run(feeds), b = split.run(feeds);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(a[0].data<float>()[0], b[0].data<float>()[0], 1e-6);
  ASSERT_EQ(b[1].sizes(), (std::vector<int64_t>{12, 10}));
  EXPECT_LT(testing::relative_l2(a[1], b[1]), 1e-6);
}

TEST(DataParallel, RecomputeAndMixedPrecisionCompose) {
  // Dropout on: each replica draws its own masks, and recompute must replay
  // each replica's own.
  const int64_t batch = 16;
  for (bool amp : {false, true}) {
    Strategy plain = data_parallel(2);
    plain.amp.enabled = amp;
    Strategy recomputed = plain;
    recomputed.recompute.mode = RecomputeMode::kAuto;
    Step a = mlp_step(batch / 2, 8, 32, 0.25, plain, OptimizerKind::kAdam);
    Step b = mlp_step(batch / 2, 8, 32, 0.25, recomputed, OptimizerKind::kAdam);
    EXPECT_GT(b.training.recomputed_nodes, 0);
    if (amp) {
      EXPECT_GT(b.training.amp_low_precision_nodes, 0);
    }
    int replica_clones = 0;
    for (const Node* node : b.graph.graph->nodes()) {
      replica_clones += node->name().rfind("replica1/", 0) == 0 && node->name().find("/recompute") != std::string::npos;
    }
    EXPECT_GT(replica_clones, 0);
    EXPECT_EQ(train_and_compare(a, b, batch, 3, /*adam=*/true), 0.0) << (amp ? "bf16" : "f32");
  }
}

TEST(DataParallel, ReplicasDrawTheirOwnDropoutMasks) {
  Step step = mlp_step(4, 1, 16, 0.5, data_parallel(2), OptimizerKind::kSgd);
  const Graph& g = *step.graph.graph;
  int dropouts = 0;
  for (const Node* node : g.nodes()) {
    if (node->op_type() != "Dropout" || node->name().rfind("replica1/", 0) == 0) continue;
    const Node* twin = g.find_node("replica1/" + node->name());
    ASSERT_NE(twin, nullptr) << node->name();
    const int64_t seed = node->has_attr("seed") ? node->attr("seed").i() : 0;
    EXPECT_NE(twin->attr("seed").i(), seed);
    ++dropouts;
  }
  EXPECT_GT(dropouts, 0);
}

TEST(DataParallel, MeasuredPeakDropsWithRecompute) {
  const int64_t batch = 512;
  Step plain = mlp_step(batch / 2, 16, 64, 0.0, data_parallel(2), OptimizerKind::kSgd);
  Strategy strategy = data_parallel(2);
  strategy.recompute.mode = RecomputeMode::kAuto;
  Step recomputed = mlp_step(batch / 2, 16, 64, 0.0, strategy, OptimizerKind::kSgd);
  auto peak_of_run = [&](Step& step) {
    Session session(step.plan);
    session.reset_peak_memory();
    session.run(feeds_for(batch, 0, false));
    int64_t peak = 0;
    for (const DeviceMemoryStats& device : session.memory_stats()) peak += device.stats.peak_bytes;
    return peak;
  };
  // The statistics are the process's caching allocators': one session at a time.
  int64_t before = peak_of_run(plain);
  int64_t after = peak_of_run(recomputed);
  std::printf("2 replicas, 16-layer MLP, batch 512: measured run peak %lld -> %lld bytes with recompute\n",
              static_cast<long long>(before), static_cast<long long>(after));
  EXPECT_LT(after * 2, before);
}

TEST(DataParallel, BadRequestsAreErrors) {
  auto expect_error = [](const std::function<void()>& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected one mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Strategy twice;
  twice.data_parallel.devices = {Device::cpu(0), Device::cpu(0)};
  expect_error([&] { mlp_step(4, 1, 8, 0.0, twice, OptimizerKind::kSgd); }, "listed twice");
  Strategy mismatch;
  mismatch.data_parallel.replicas = 3;
  mismatch.data_parallel.devices = {Device::cpu(0), Device::cpu(1)};
  expect_error([&] { mlp_step(4, 1, 8, 0.0, mismatch, OptimizerKind::kSgd); }, "3 replicas but 2 devices");

  // A symbolic batch cannot be split ahead of time.
  {
    GraphBuilder b("symbolic");
    Var x = b.input("x", {DType::kFloat32, Shape{Dim::symbol("N"), 4}});
    Var w = b.parameter("w", Tensor::from_vector(testing::random_floats(4, 3), {4, 1}));
    Var loss = b.op("ReduceMean", {b.op("MatMul", {x, w})}, {{"keepdims", Attribute(int64_t{0})}});
    b.output(loss);
    std::unique_ptr<Graph> g = b.finish();
    const std::string name = loss.value()->name();
    expect_error([&] { minimize(*g, name, {.kind = OptimizerKind::kSgd}, data_parallel(2)); }, "'x' needs a static first dim");
  }
  // State written where the loss depends on it: every replica would write it.
  {
    GraphBuilder b("assign_in_forward");
    Var x = b.input("x", {DType::kFloat32, Shape{2, 4}});
    Var w = b.parameter("w", Tensor::from_vector(testing::random_floats(4, 4), {4, 1}));
    Var counter = b.state("counter", Tensor::from_vector(testing::random_floats(2, 5), {2, 1}));
    Var written = b.op("Assign", {counter, b.op("ReduceSum", {x}, {{"axes", Attribute(std::vector<int64_t>{1})}})});
    Var loss = b.op("ReduceMean", {b.op("Mul", {written, b.op("MatMul", {x, w})})}, {{"keepdims", Attribute(int64_t{0})}});
    b.output(loss);
    std::unique_ptr<Graph> g = b.finish();
    const std::string name = loss.value()->name();
    expect_error([&] { minimize(*g, name, {.kind = OptimizerKind::kSgd}, data_parallel(2)); }, "has side effects");
  }
}

}  // namespace
}  // namespace weir
