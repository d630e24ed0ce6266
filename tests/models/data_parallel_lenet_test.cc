// LeNet trained data parallel on 2 and 4 ranks of an in-process world (one
// program, N sessions of one plan, each rank on its share of the batch)
// against one rank on the whole batch: every step's loss within 1e-5
// relative for SGD, Momentum and Adam, plain, with bf16 AMP and with
// automatic recompute; after every step all ranks' parameters are bitwise
// equal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace weir {
namespace {

constexpr int64_t kBatch = 16;
constexpr int kSteps = 3;

struct Case {
  OptimizerKind optimizer;
  std::string variant;  // "plain", "bf16", "recompute"
};

Strategy strategy_of(const std::string& variant, int ranks, bool communicate_alone = false) {
  Strategy strategy;
  strategy.data_parallel.ranks = ranks;
  strategy.data_parallel.communicate_alone = communicate_alone;
  if (variant == "bf16") strategy.amp.enabled = true;
  if (variant == "recompute") strategy.recompute.mode = RecomputeMode::kAuto;
  return strategy;
}

// Step `step`'s whole batch: seeded 28x28 images and labels.
std::pair<Tensor, Tensor> batch_of(int step) {
  std::mt19937 rng(static_cast<uint32_t>(100 + step));
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kBatch * 28 * 28));
  for (float& v : x) v = pixel(rng);
  std::vector<int64_t> y(static_cast<size_t>(kBatch));
  for (int64_t& label : y) label = static_cast<int64_t>(rng() % 10);
  return {Tensor::from_vector(x, {kBatch, 1, 28, 28}), Tensor::from_vector(y, {kBatch})};
}

// Every step's loss, training on `ranks` ranks; checks that the ranks'
// parameters agree bit for bit after every step.
std::vector<float> train(const Case& c, int ranks, bool communicate_alone = false) {
  models::ClassifierGraph model = models::build_classifier("lenet", kBatch / ranks, /*training=*/true, {.classes = 10});
  TrainingGraph step =
      minimize(*model.graph, model.loss, {.kind = c.optimizer}, strategy_of(c.variant, ranks, communicate_alone));
  int allreduces = 0;
  for (const Node* node : model.graph->nodes()) allreduces += node->op_type() == "AllReduce" ? 1 : 0;
  EXPECT_EQ(allreduces > 0, ranks > 1 || communicate_alone) << allreduces << " AllReduce nodes";
  InProcessRanks world(compile(*model.graph), ranks);
  std::vector<float> losses;
  for (int i = 0; i < kSteps; ++i) {
    auto [x, y] = batch_of(i);
    std::vector<std::map<std::string, Tensor>> feeds;
    const int64_t share = kBatch / ranks;
    for (int r = 0; r < ranks; ++r) {
      std::map<std::string, Tensor> mine = {{model.input, x.slice(r * share, (r + 1) * share)},
                                            {model.labels, y.slice(r * share, (r + 1) * share)},
                                            {step.lr_input, Tensor::scalar<float>(c.optimizer == OptimizerKind::kAdam ? 1e-3f : 0.05f)}};
      if (!step.step_input.empty()) mine[step.step_input] = Tensor::scalar<int64_t>(i + 1);
      feeds.push_back(std::move(mine));
    }
    std::vector<std::vector<Tensor>> outputs = world.run(feeds);
    losses.push_back(outputs[0][0].data<float>()[0]);
    for (int r = 1; r < ranks; ++r) {
      EXPECT_TRUE(outputs[static_cast<size_t>(r)][0].bitwise_equal(outputs[0][0])) << "loss of rank " << r;
      for (const std::string& name : step.parameters) {
        EXPECT_TRUE(world.session(r).state(name).bitwise_equal(world.session(0).state(name)))
            << name << " of rank " << r << " after step " << i + 1;
      }
    }
  }
  return losses;
}

class DataParallelLenet : public ::testing::TestWithParam<Case> {};

TEST_P(DataParallelLenet, RanksTrainLikeOneRankOnTheWholeBatch) {
  const Case& c = GetParam();
  std::vector<float> one = train(c, 1);
  for (int ranks : {2, 4}) {
    std::vector<float> split = train(c, ranks);
    ASSERT_EQ(split.size(), one.size());
    double worst = 0;
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_TRUE(std::isfinite(one[i]) && std::isfinite(split[i]));
      worst = std::max(worst, std::abs(static_cast<double>(split[i]) - one[i]) / std::abs(static_cast<double>(one[i])));
    }
    std::printf("lenet %s %s, %d ranks vs one: losses %.9g %.9g %.9g, largest relative difference %.3g\n",
                optimizer_kind_name(c.optimizer).c_str(), c.variant.c_str(), ranks, split[0], split[1], split[2], worst);
    // bf16 AMP too: the weight gradients' sums are written in f32
    // (F32GradientAccumulation), not rounded per rank to 8 bits.
    EXPECT_LT(worst, 1e-5) << ranks << " ranks";
  }
}

// A launched world of one process (one GPU in an NCCL world) runs its
// collectives all the same: its gradients go through AllReduce over a group
// of one, which leaves every bit as it was.
TEST(DataParallelLenetAlone, AWorldOfOneAveragesThroughAllReduceAndTrainsLikeNoWorld) {
  const Case c{OptimizerKind::kMomentum, "plain"};
  std::vector<float> plain = train(c, 1);
  std::vector<float> alone = train(c, 1, /*communicate_alone=*/true);
  EXPECT_EQ(alone, plain);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, DataParallelLenet,
    ::testing::Values(Case{OptimizerKind::kSgd, "plain"}, Case{OptimizerKind::kMomentum, "plain"},
                      Case{OptimizerKind::kAdam, "plain"}, Case{OptimizerKind::kSgd, "bf16"},
                      Case{OptimizerKind::kMomentum, "bf16"}, Case{OptimizerKind::kAdam, "bf16"},
                      Case{OptimizerKind::kSgd, "recompute"}, Case{OptimizerKind::kMomentum, "recompute"},
                      Case{OptimizerKind::kAdam, "recompute"}),
    [](const ::testing::TestParamInfo<Case>& param) {
      return optimizer_kind_name(param.param.optimizer) + "_" + param.param.variant;
    });

}  // namespace
}  // namespace weir
