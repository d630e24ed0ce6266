// Data-parallel rewrite (passes/collectives/data_parallel): the step becomes
// every rank's program; N ranks (an in-process world), each on its share of
// the batch, train like one rank on the whole batch, their parameters stay
// bitwise equal, and recompute and AMP compose with it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "passes/collectives/data_parallel.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/passes/data_parallel_steps.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::feeds_for;
using testing::mlp_step;
using testing::shares;
using testing::Step;

// One AllReduce per gradient: these tests look at the data-parallel rewrite
// alone (gradient_buckets_test.cc covers the buckets it is fused into).
Strategy data_parallel(int ranks) {
  Strategy strategy;
  strategy.data_parallel.ranks = ranks;
  strategy.communication.fuse_all_reduce_ops = false;
  return strategy;
}

// Trains `one` (one rank, whole batch) and `split` (on `ranks` ranks) for
// `steps` steps on the same batches. Every rank's parameters must be
// bitwise equal after every step; returns the largest relative difference
// of losses and parameters between the two.
double train_and_compare(Step& one, Step& split, int ranks, int64_t batch, int steps, bool adam) {
  Session whole(one.plan);
  InProcessRanks world(split.plan, ranks);
  double worst = 0;
  for (int i = 0; i < steps; ++i) {
    auto feeds = feeds_for(batch, i, adam);
    float la = whole.run(feeds)[0].data<float>()[0];
    std::vector<std::vector<Tensor>> outputs = world.run(shares(feeds, ranks));
    float lb = outputs[0][0].data<float>()[0];
    EXPECT_TRUE(std::isfinite(la) && std::isfinite(lb));
    worst = std::max(worst, std::abs(static_cast<double>(la) - lb) / std::max(std::abs(static_cast<double>(la)), 1e-30));
    for (int r = 1; r < ranks; ++r) {
      EXPECT_TRUE(outputs[static_cast<size_t>(r)][0].bitwise_equal(outputs[0][0])) << "loss of rank " << r;
      for (const std::string& name : split.training.parameters) {
        EXPECT_TRUE(world.session(r).state(name).bitwise_equal(world.session(0).state(name)))
            << name << " of rank " << r << " after step " << i + 1;
      }
    }
  }
  EXPECT_EQ(one.training.parameters, split.training.parameters);
  for (const std::string& name : one.training.parameters) {
    worst = std::max(worst, testing::relative_l2(whole.state(name), world.session(0).state(name)));
  }
  return worst;
}

TEST(DataParallel, RanksTrainLikeOneRankOnTheWholeBatch) {
  const int64_t batch = 32;
  Step whole = mlp_step(batch, 3, 32, 0.0, {}, OptimizerKind::kSgd);
  Step split = mlp_step(batch / 4, 3, 32, 0.0, data_parallel(4), OptimizerKind::kSgd);
  EXPECT_EQ(split.training.ranks, 4);
  // One AllReduce per gradient and one for the loss: one program, no clones.
  EXPECT_EQ(split.training.allreduces, static_cast<int>(split.training.parameters.size() + 1));

  const Graph& g = *split.graph.graph;
  EXPECT_EQ(g.find_value("x")->shape(), (Shape{batch / 4, 1, 8, 8}));
  EXPECT_EQ(g.nodes().size(), whole.graph.graph->nodes().size() + split.training.parameters.size() + 1);
  int updates = 0;
  for (const Node* node : g.nodes()) {
    EXPECT_FALSE(node->device().has_value()) << node->name() << ": the program is placed by the rank running it";
    if (node->op_type() == "SGD") {
      ++updates;
      EXPECT_EQ(node->input(1)->producer()->op_type(), "AllReduce") << node->name();
    }
  }
  EXPECT_EQ(updates, static_cast<int>(split.training.parameters.size()));
  EXPECT_EQ(g.outputs().front()->name(), "loss");
  EXPECT_EQ(g.outputs().front()->producer()->op_type(), "AllReduce");

  // The same sums in another order: equal within f32 rounding.
  double sgd = train_and_compare(whole, split, 4, batch, 3, /*adam=*/false);
  std::printf("4 ranks vs one, 3 SGD steps: largest relative difference %.3g\n", sgd);
  EXPECT_LT(sgd, 1e-5);

  Step whole_adam = mlp_step(batch, 3, 32, 0.0, {}, OptimizerKind::kAdam);
  Step split_adam = mlp_step(batch / 2, 3, 32, 0.0, data_parallel(2), OptimizerKind::kAdam);
  double adam = train_and_compare(whole_adam, split_adam, 2, batch, 3, /*adam=*/true);
  std::printf("2 ranks vs one, 3 Adam steps: largest relative difference %.3g\n", adam);
  EXPECT_LT(adam, 1e-5);
}

TEST(DataParallel, ScalarOutputsAreAveragedAndRowsStayTheRanks) {
  // The logits as a second output: each rank's own rows.
  auto with_logits = [](int64_t batch, const Strategy& strategy) {
    models::ZooOptions zoo;
    zoo.image_size = 8;
    models::ClassifierGraph c = models::build_classifier("mlp", batch, /*training=*/true, zoo);
    for (Node* node : c.graph->nodes()) {
      if (node->op_type() == "SoftmaxCrossEntropyLoss") c.graph->add_output(node->input(0));
    }
    minimize(*c.graph, c.loss, {.kind = OptimizerKind::kSgd}, strategy);
    return compile(*c.graph);
  };
  Session whole(with_logits(12, {}));
  InProcessRanks split(with_logits(4, data_parallel(3)), 3);
  auto feeds = feeds_for(12, 0, false);
  std::vector<Tensor> a = whole.run(feeds);
  std::vector<std::vector<Tensor>> b = split.run(shares(feeds, 3));
  ASSERT_EQ(a.size(), 2u);
  for (int64_t r = 0; r < 3; ++r) {
    const std::vector<Tensor>& mine = b[static_cast<size_t>(r)];
    ASSERT_EQ(mine.size(), 2u);
    EXPECT_NEAR(a[0].data<float>()[0], mine[0].data<float>()[0], 1e-6);
    ASSERT_EQ(mine[1].sizes(), (std::vector<int64_t>{4, 10}));
    EXPECT_LT(testing::relative_l2(a[1].slice(4 * r, 4 * r + 4).clone(), mine[1]), 1e-6) << "rank " << r;
  }
}

TEST(DataParallel, RecomputeAndMixedPrecisionCompose) {
  // Dropout on: each rank draws its own masks, and recompute must replay
  // each rank's own.
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
    InProcessRanks ra(a.plan, 2), rb(b.plan, 2);
    for (int i = 0; i < 3; ++i) {
      auto feeds = shares(feeds_for(batch, i, /*adam=*/true), 2);
      std::vector<std::vector<Tensor>> la = ra.run(feeds), lb = rb.run(feeds);
      EXPECT_TRUE(la[0][0].bitwise_equal(lb[0][0])) << (amp ? "bf16" : "f32") << " step " << i;
    }
    for (const std::string& name : a.training.parameters) {
      for (int r = 0; r < 2; ++r) {
        EXPECT_TRUE(ra.session(r).state(name).bitwise_equal(rb.session(r).state(name))) << name << " rank " << r;
      }
    }
  }
}

TEST(DataParallel, DistributedParametersKeepTheirOwnGradients) {
  Strategy strategy = data_parallel(2);
  Step probe = mlp_step(4, 1, 8, 0.0, {}, OptimizerKind::kSgd);
  const std::string sharded = probe.training.parameters.front();
  strategy.data_parallel.distributed_parameters = {sharded};
  Step step = mlp_step(4, 1, 8, 0.0, strategy, OptimizerKind::kSgd);
  EXPECT_EQ(step.training.allreduces, static_cast<int>(step.training.parameters.size()));  // loss, all but one gradient
  for (const Node* node : step.graph.graph->nodes()) {
    if (node->op_type() != "SGD") continue;
    const bool averaged = node->input(1)->producer()->op_type() == "AllReduce";
    EXPECT_EQ(averaged, node->input(0)->name() != sharded) << node->name();
  }
}

TEST(DataParallel, MeasuredPeakDropsWithRecompute) {
  const int64_t batch = 512;
  Step plain = mlp_step(batch / 2, 16, 64, 0.0, data_parallel(2), OptimizerKind::kSgd);
  Strategy strategy = data_parallel(2);
  strategy.recompute.mode = RecomputeMode::kAuto;
  Step recomputed = mlp_step(batch / 2, 16, 64, 0.0, strategy, OptimizerKind::kSgd);
  auto peak_of_run = [&](Step& step) {
    InProcessRanks ranks(step.plan, 2);
    for (int r = 0; r < 2; ++r) ranks.session(r).reset_peak_memory();
    ranks.run(shares(feeds_for(batch, 0, false), 2));
    int64_t peak = 0;
    for (int r = 0; r < 2; ++r) {
      for (const DeviceMemoryStats& device : ranks.session(r).memory_stats()) peak += device.stats.peak_bytes;
    }
    return peak;
  };
  // The statistics are the process's caching allocators': one world at a time.
  int64_t before = peak_of_run(plain);
  int64_t after = peak_of_run(recomputed);
  std::printf("2 ranks, 16-layer MLP, batch 512: measured run peak %lld -> %lld bytes with recompute\n",
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
  expect_error([&] { mlp_step(4, 1, 8, 0.0, data_parallel(0), OptimizerKind::kSgd); }, "at least 1 rank");
  Strategy unknown = data_parallel(2);
  unknown.data_parallel.distributed_parameters = {"nonesuch"};
  expect_error([&] { mlp_step(4, 1, 8, 0.0, unknown, OptimizerKind::kSgd); }, "distributed parameter 'nonesuch'");

  // State written where the loss depends on it: each rank would write its own.
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
