// Gradient merge (passes/training/gradient_merge.h) on in-process worlds:
// k micro-steps of batch B train exactly like one step of batch k*B (the
// losses of the k micro-steps average to the whole batch's, the parameters
// agree after every update); between updates the parameters do not move and
// no collective communicates; the sum (avg false) equals k times the
// learning rate; dynamic loss scaling is refused with it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/in_process_ranks.h"
#include "runtime/session.h"
#include "tests/passes/data_parallel_steps.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::feeds_for;
using testing::mlp_step;
using testing::shares;
using testing::Step;

constexpr int64_t kMicroBatch = 4;  // one rank's, per micro-step

Strategy merging(int ranks, int k, bool avg = true) {
  Strategy strategy;
  strategy.data_parallel.ranks = ranks;
  strategy.gradient_merge = {.enabled = true, .k_steps = k, .avg = avg};
  return strategy;
}

Strategy plain(int ranks) {
  Strategy strategy;
  strategy.data_parallel.ranks = ranks;
  return strategy;
}

std::vector<Tensor> parameters(const Step& step, InProcessRanks& world) {
  std::vector<Tensor> values;
  for (const std::string& name : step.training.parameters) values.push_back(world.session(0).state(name).clone());
  return values;
}

// Rank r's rows of micro-step m out of the whole batch of the k micro-steps:
// each rank's share of the whole batch, cut into k micro-batches.
std::vector<std::map<std::string, Tensor>> micro_shares(const std::map<std::string, Tensor>& whole, int ranks, int m,
                                                        int64_t number) {
  std::vector<std::map<std::string, Tensor>> out = shares(whole, ranks);
  for (auto& feeds : out) {
    for (const char* name : {"x", "labels"}) feeds[name] = feeds[name].slice(m * kMicroBatch, (m + 1) * kMicroBatch);
    feeds["step"] = Tensor::scalar<int64_t>(number);
  }
  return out;
}

void expect_same_training(OptimizerKind kind, int ranks, int k, const std::string& what) {
  Step merged = mlp_step(kMicroBatch, 2, 32, 0.0, merging(ranks, k), kind);
  Step whole = mlp_step(kMicroBatch * k, 2, 32, 0.0, plain(ranks), kind);
  EXPECT_EQ(merged.training.gradient_merge_steps, k);
  if (ranks > 1) {
    EXPECT_GT(merged.training.merged_collectives, 0) << what;
  }
  EXPECT_EQ(merged.training.step_input, "step");
  InProcessRanks merged_world(merged.plan, ranks);
  InProcessRanks whole_world(whole.plan, ranks);
  const bool adam = kind == OptimizerKind::kAdam;
  for (int update = 0; update < 4; ++update) {
    const std::map<std::string, Tensor> feeds = feeds_for(kMicroBatch * k * ranks, update, adam);
    const double want = whole_world.run(shares(feeds, ranks))[0][0].data<float>()[0];
    double sum = 0;
    for (int m = 0; m < k; ++m) {
      const std::vector<Tensor> before = parameters(merged, merged_world);
      const int64_t number = int64_t{update} * k + m + 1;
      sum += merged_world.run(micro_shares(feeds, ranks, m, number))[0][0].data<float>()[0];
      if (m + 1 < k) {  // between updates the parameters stay put
        const std::vector<Tensor> after = parameters(merged, merged_world);
        for (size_t i = 0; i < after.size(); ++i) {
          EXPECT_TRUE(after[i].bitwise_equal(before[i])) << what << ": micro-step " << number << " moved a parameter";
        }
      }
    }
    EXPECT_NEAR(sum / k, want, 1e-5 * std::fabs(want)) << what << ", update " << update + 1;
    const std::vector<Tensor> got = parameters(merged, merged_world), expected = parameters(whole, whole_world);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_LT(testing::relative_l2(got[i], expected[i]), 1e-5)
          << what << ", update " << update + 1 << ", " << merged.training.parameters[i];
    }
    for (const std::string& name : merged.training.parameters) {  // the accumulators start over
      const Tensor accumulator = merged_world.session(0).state(name + "/gradient_merge");
      for (int64_t i = 0; i < accumulator.num_elements(); ++i) ASSERT_EQ(accumulator.data<float>()[i], 0.0f) << name;
    }
  }
}

TEST(GradientMerge, MicroStepsTrainLikeTheWholeBatch) {
  expect_same_training(OptimizerKind::kMomentum, 1, 3, "momentum, 1 rank, k = 3");
  expect_same_training(OptimizerKind::kAdam, 2, 2, "adam, 2 ranks, k = 2");
  expect_same_training(OptimizerKind::kMomentum, 4, 2, "momentum, 4 ranks, k = 2");
}

TEST(GradientMerge, CollectivesSkipBetweenUpdates) {
  Step merged = mlp_step(kMicroBatch, 2, 32, 0.0, merging(2, 2), OptimizerKind::kMomentum);
  int skipping = 0, every_step = 0;
  for (const Node* node : merged.graph.graph->nodes()) {
    if (node->op_type() != "AllReduce") continue;
    if (node->num_inputs() == 2) {
      EXPECT_TRUE(node->input(1)->name().starts_with("gradient_merge/skip")) << node->input(1)->name();
      ++skipping;
    } else {
      ++every_step;
    }
  }
  EXPECT_EQ(skipping, merged.training.merged_collectives);
  EXPECT_EQ(skipping, 1);    // the one bucket of gradients
  EXPECT_EQ(every_step, 1);  // the loss, averaged for every step's report
}

TEST(GradientMerge, SumIsTheAverageAtKTimesTheLearningRate) {
  const int k = 2;
  Step summed = mlp_step(kMicroBatch, 1, 16, 0.0, merging(1, k, /*avg=*/false), OptimizerKind::kSgd);
  Step averaged = mlp_step(kMicroBatch, 1, 16, 0.0, merging(1, k), OptimizerKind::kSgd);
  Session sum_session(summed.plan), avg_session(averaged.plan);
  for (int m = 0; m < 2 * k; ++m) {
    std::map<std::string, Tensor> feeds = feeds_for(kMicroBatch, m, false);
    feeds["step"] = Tensor::scalar<int64_t>(m + 1);
    feeds["lr"] = Tensor::scalar(0.05f);
    sum_session.run(feeds);
    feeds["lr"] = Tensor::scalar(0.05f * k);
    avg_session.run(feeds);
  }
  for (const std::string& name : summed.training.parameters) {
    EXPECT_LT(testing::relative_l2(sum_session.state(name), avg_session.state(name)), 1e-6) << name;
  }
}

TEST(GradientMerge, DynamicLossScalingIsRefused) {
  Strategy strategy = merging(1, 2);
  strategy.amp.enabled = true;
  strategy.amp.dtype = DType::kFloat16;
  try {
    mlp_step(kMicroBatch, 1, 16, 0.0, strategy, OptimizerKind::kSgd);
    FAIL() << "gradient merge with fp16 loss scaling was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("loss scaling"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace weir
