// LocalSGD (passes/collectives/local_sgd.h) on in-process worlds: with
// k = 1 it trains like data parallelism on the whole batch; with k > 1 the
// ranks' parameters equal, after every step that averages, the mean of what
// separate single-rank trainings from the same start reached (the
// reference), and differ between averages, when no collective
// communicates; a distributed parameter is never averaged; the
// combinations it excludes are refused naming both.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
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

constexpr int64_t kBatch = 4;  // one rank's

Strategy local_sgd(int ranks, int k, int begin_step) {
  Strategy strategy;
  strategy.data_parallel.ranks = ranks;
  strategy.localsgd = {.enabled = true, .adaptive = false, .k_steps = k, .init_k_steps = 1, .begin_step = begin_step};
  return strategy;
}

void expect_close(const Tensor& got, const Tensor& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.num_elements(), want.num_elements()) << what;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double a = got.data<float>()[i], b = want.data<float>()[i];
    ASSERT_LE(std::fabs(a - b), tolerance * (1 + std::fabs(b))) << what << " element " << i;
  }
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(LocalSgd, EveryStepAveragingTrainsLikeDataParallelism) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum}) {
    Strategy dense;
    dense.data_parallel.ranks = 2;
    Step local = mlp_step(kBatch, 2, 32, 0.0, local_sgd(2, 1, 1), kind);
    Step data_parallel = mlp_step(kBatch, 2, 32, 0.0, dense, kind);
    EXPECT_EQ(local.training.localsgd_values, static_cast<int>(local.training.parameters.size()));
    EXPECT_GT(local.training.localsgd_collectives, 0);
    InProcessRanks local_world(local.plan, 2);
    InProcessRanks dp_world(data_parallel.plan, 2);
    for (int s = 0; s < 5; ++s) {
      std::map<std::string, Tensor> feeds = feeds_for(kBatch * 2, s, false);
      std::vector<std::map<std::string, Tensor>> rank_feeds = shares(feeds, 2);
      for (auto& f : rank_feeds) f["step"] = Tensor::scalar<int64_t>(s + 1);
      local_world.run(rank_feeds);
      dp_world.run(shares(feeds, 2));
      for (const std::string& name : local.training.parameters) {
        for (int r = 0; r < 2; ++r) {
          expect_close(local_world.session(r).state(name), dp_world.session(0).state(name), 2e-6,
                       name + " rank " + std::to_string(r) + " step " + std::to_string(s + 1));
        }
      }
    }
  }
}

TEST(LocalSgd, AveragesEveryKStepsLikeSeparateTrainingsAveraged) {
  constexpr int kRanks = 3, kK = 3, kBegin = 2;
  Step local = mlp_step(kBatch, 2, 32, 0.0, local_sgd(kRanks, kK, kBegin), OptimizerKind::kMomentum);
  InProcessRanks world(local.plan, kRanks);
  // The reference: one single-rank training per rank from the same start,
  // whose parameters are replaced by their mean on the steps that average.
  Strategy alone;
  Step single = mlp_step(kBatch, 2, 32, 0.0, alone, OptimizerKind::kMomentum);
  std::vector<std::unique_ptr<Session>> separate;
  for (int r = 0; r < kRanks; ++r) separate.push_back(std::make_unique<Session>(single.plan));
  const std::vector<bool> averages = {true, true, false, false, true, false, false, true, false};
  for (size_t s = 0; s < averages.size(); ++s) {
    std::map<std::string, Tensor> feeds = feeds_for(kBatch * kRanks, static_cast<int>(s), false);
    std::vector<std::map<std::string, Tensor>> rank_feeds = shares(feeds, kRanks);
    for (auto& f : rank_feeds) f["step"] = Tensor::scalar<int64_t>(static_cast<int64_t>(s) + 1);
    world.run(rank_feeds);
    for (int r = 0; r < kRanks; ++r) {
      std::map<std::string, Tensor> mine = shares(feeds, kRanks)[static_cast<size_t>(r)];
      separate[static_cast<size_t>(r)]->run(mine);
    }
    for (const std::string& name : local.training.parameters) {
      if (averages[s]) {
        Tensor mean = separate[0]->state(name).clone();
        for (int64_t i = 0; i < mean.num_elements(); ++i) {
          double sum = 0;
          for (int r = 0; r < kRanks; ++r) sum += separate[static_cast<size_t>(r)]->state(name).data<float>()[i];
          mean.data<float>()[i] = static_cast<float>(sum / kRanks);
        }
        for (int r = 0; r < kRanks; ++r) separate[static_cast<size_t>(r)]->set_state(name, mean.clone());
      }
      for (int r = 0; r < kRanks; ++r) {
        expect_close(world.session(r).state(name), separate[static_cast<size_t>(r)]->state(name), 1e-5,
                     name + " rank " + std::to_string(r) + " step " + std::to_string(s + 1));
      }
      const bool equal = bitwise_equal(world.session(0).state(name), world.session(1).state(name));
      EXPECT_EQ(equal, averages[s]) << name << " step " << s + 1;
    }
  }
}

TEST(LocalSgd, DistributedParametersAreNotAveraged) {
  Strategy strategy = local_sgd(2, 1, 1);
  Step probe = mlp_step(kBatch, 2, 32, 0.0, Strategy{}, OptimizerKind::kSgd);
  const std::string own = probe.training.parameters.front();
  strategy.data_parallel.distributed_parameters = {own};
  Step local = mlp_step(kBatch, 2, 32, 0.0, strategy, OptimizerKind::kSgd);
  EXPECT_EQ(local.training.localsgd_values, static_cast<int>(local.training.parameters.size()) - 1);
  InProcessRanks world(local.plan, 2);
  std::vector<std::map<std::string, Tensor>> rank_feeds = shares(feeds_for(kBatch * 2, 0, false), 2);
  for (auto& f : rank_feeds) f["step"] = Tensor::scalar<int64_t>(1);
  world.run(rank_feeds);
  for (const std::string& name : local.training.parameters) {
    EXPECT_EQ(bitwise_equal(world.session(0).state(name), world.session(1).state(name)), name != own) << name;
  }
}

TEST(LocalSgd, ExcludedCombinationsAreRefusedNamingBoth) {
  auto message = [](const Strategy& strategy, OptimizerKind kind) {
    try {
      mlp_step(kBatch, 1, 8, 0.0, strategy, kind);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Strategy with_dgc = local_sgd(2, 2, 1);
  with_dgc.dgc.enabled = true;
  std::string m = message(with_dgc, OptimizerKind::kMomentum);
  EXPECT_NE(m.find("localsgd"), std::string::npos) << m;
  EXPECT_NE(m.find("dgc"), std::string::npos) << m;
  Strategy with_merge = local_sgd(2, 2, 1);
  with_merge.localsgd.adaptive = true;
  with_merge.gradient_merge = {.enabled = true, .k_steps = 2, .avg = true};
  m = message(with_merge, OptimizerKind::kSgd);
  EXPECT_NE(m.find("adaptive_localsgd"), std::string::npos) << m;
  EXPECT_NE(m.find("gradient_merge"), std::string::npos) << m;
}

}  // namespace
}  // namespace weir
