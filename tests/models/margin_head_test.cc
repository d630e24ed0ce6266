// The model-parallel margin head (frontend/nn/margin_head.h) against the
// one-rank head: on in-process worlds of 2, 3 and 4 ranks with 10 classes
// (never divisible by all of them), every step's loss and the gradients of
// the replicated backbone and of every class centre equal the one-rank
// head's within 1e-5 relative, for ArcFace, CosFace and the plain softmax.
// The gradients are the ones the updates read. Each step starts both from
// the reference's parameters (so the comparison is of the step, not of two
// trajectories whose rounding a sharp s = 64 loss amplifies), and the
// reference then moves on. PartialFC trains only the sampled rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "frontend/builder/graph_builder.h"
#include "frontend/nn/functional.h"
#include "frontend/nn/init.h"
#include "frontend/nn/margin_head.h"
#include "frontend/optim/optimizer.h"
#include "ops/loss/class_shards.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace weir {
namespace {

constexpr int64_t kClasses = 10;
constexpr int64_t kInputs = 5;
constexpr int64_t kEmbedding = 6;
constexpr int64_t kBatch = 12;  // the whole step's

struct HeadStep {
  std::shared_ptr<const Plan> plan;
  std::string weight;
  std::string backbone = "backbone/w";
  int64_t sampled = 0;
};

// A linear backbone x [B, 5] -> [B, 6] and the margin head, as one rank's
// SGD step of a world of `ranks`.
HeadStep head_step(int ranks, const std::string& margin, double sample_ratio = 1.0, int64_t classes = kClasses) {
  GraphBuilder b("margin_head", 7);
  Var x = b.input("x", {DType::kFloat32, Shape{kBatch / ranks, kInputs}});
  Var y = b.input("labels", {DType::kInt64, Shape{kBatch / ranks}});
  Var w = b.parameter("backbone/w", init::normal({kInputs, kEmbedding}, 0, 0.5, b.rng()));
  nn::MarginHeadOptions options = nn::margin_preset(margin);
  options.classes = classes;
  options.embedding = kEmbedding;
  options.ranks = ranks;
  options.sample_ratio = sample_ratio;
  options.seed = 11;
  nn::MarginHead head = nn::margin_softmax_loss(b, nn::matmul(x, w), y, options);
  b.output(head.loss);
  const std::string loss = head.loss.name();
  std::unique_ptr<Graph> graph = b.finish();
  Strategy strategy;
  strategy.data_parallel.ranks = ranks;
  if (ranks > 1) strategy.data_parallel.distributed_parameters = {head.weight};
  minimize(*graph, loss, {.kind = OptimizerKind::kSgd}, strategy);
  // The gradients each update reads (averaged, or divided by the ranks)
  // become outputs 1 (backbone) and 2 (head), after the loss.
  for (const std::string& parameter : {std::string("backbone/w"), head.weight}) {
    for (Node* node : graph->nodes()) {
      if (node->op_type() == "SGD" && node->input(0)->name() == parameter) graph->add_output(node->input(1));
    }
  }
  EXPECT_EQ(graph->outputs().size(), 3u);
  return {compile(*graph), head.weight, "backbone/w", head.sampled};
}

std::map<std::string, Tensor> batch(int step) {
  std::mt19937_64 rng(static_cast<uint64_t>(step) + 100);
  Tensor x(DType::kFloat32, {kBatch, kInputs});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1);
  Tensor y(DType::kInt64, {kBatch});
  for (int64_t i = 0; i < kBatch; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % kClasses);
  return {{"x", x}, {"labels", y}, {"lr", Tensor::scalar<float>(0.05f)}};
}

// Rank r's rows of a batch (the loader's contiguous shares).
std::vector<std::map<std::string, Tensor>> shares(const std::map<std::string, Tensor>& feeds, int ranks) {
  std::vector<std::map<std::string, Tensor>> out(static_cast<size_t>(ranks));
  const int64_t rows = kBatch / ranks;
  for (int r = 0; r < ranks; ++r) {
    for (const auto& [name, tensor] : feeds) {
      out[static_cast<size_t>(r)][name] = name == "lr" ? tensor : tensor.slice(r * rows, (r + 1) * rows).clone();
    }
  }
  return out;
}

Tensor rows_of(const Tensor& t, int64_t start, int64_t count) { return t.slice(start, start + count).clone(); }

class ShardedHeadTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ShardedHeadTest, LossesAndGradientsEqualTheOneRankHeadEveryStep) {
  const auto& [margin, ranks] = GetParam();
  HeadStep one = head_step(1, margin);
  HeadStep split = head_step(ranks, margin);
  Session whole(one.plan);
  InProcessRanks world(split.plan, ranks);
  Tensor centres = whole.state(one.weight);
  nn::fill_class_centres(centres, kClasses, 1, 0, 11);
  for (int r = 0; r < ranks; ++r) {
    Tensor shard = world.session(r).state(split.weight);
    nn::fill_class_centres(shard, kClasses, ranks, r, 11);
    // The shard holds exactly its classes' rows of the one-rank head's.
    const ClassShard rows = class_shard(kClasses, ranks, r);
    ASSERT_TRUE(rows_of(shard, 0, rows.count).bitwise_equal(rows_of(centres, rows.start, rows.count))) << "rank " << r;
  }

  double worst_loss = 0, worst_backbone = 0, worst_head = 0;
  for (int step = 0; step < 20; ++step) {
    // Both start the step from the reference's parameters.
    const Tensor backbone = whole.state(one.backbone).clone();
    const Tensor head = whole.state(one.weight).clone();
    for (int r = 0; r < ranks; ++r) {
      world.session(r).set_state(split.backbone, backbone);
      const ClassShard rows = class_shard(kClasses, ranks, r);
      Tensor shard = world.session(r).state(split.weight);
      std::memcpy(shard.data<float>(), head.data<float>() + rows.start * kEmbedding,
                  static_cast<size_t>(rows.count * kEmbedding) * sizeof(float));
    }
    const std::map<std::string, Tensor> feeds = batch(step);
    const std::vector<Tensor> reference = whole.run(feeds);
    std::vector<std::vector<Tensor>> outputs = world.run(shares(feeds, ranks));
    const double loss = reference[0].data<float>()[0];
    const double split_loss = outputs[0][0].data<float>()[0];
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    worst_loss = std::max(worst_loss, std::abs(split_loss - loss) / std::abs(loss));
    const Tensor& backbone_grad = reference[1];
    const Tensor& head_grad = reference[2];
    Tensor split_head_grad(DType::kFloat32, {kClasses, kEmbedding});
    for (int r = 0; r < ranks; ++r) {
      worst_backbone = std::max(worst_backbone, testing::relative_l2(backbone_grad, outputs[static_cast<size_t>(r)][1]));
      const ClassShard rows = class_shard(kClasses, ranks, r);
      std::memcpy(split_head_grad.data<float>() + rows.start * kEmbedding, outputs[static_cast<size_t>(r)][2].data<float>(),
                  static_cast<size_t>(rows.count * kEmbedding) * sizeof(float));
    }
    worst_head = std::max(worst_head, testing::relative_l2(head_grad, split_head_grad));

  }
  std::printf("%s over %d ranks, 20 steps: loss %.2e, backbone gradient %.2e, head gradient %.2e (worst relative)\n",
              margin.c_str(), ranks, worst_loss, worst_backbone, worst_head);
  EXPECT_LT(worst_loss, 1e-5);
  EXPECT_LT(worst_backbone, 1e-5);
  EXPECT_LT(worst_head, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(MarginsAndRanks, ShardedHeadTest,
                         ::testing::Combine(::testing::Values("arcface", "cosface", "softmax"), ::testing::Values(2, 3, 4)),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_" + std::to_string(std::get<1>(param_info.param)) + "_ranks";
                         });

TEST(MarginHead, ShardIsADistributedParameterDividedByTheRanks) {
  HeadStep split = head_step(3, "arcface");
  const Graph& graph = split.plan->graph();
  int gathers = 0, scatters = 0, divided = 0;
  for (const Node* node : graph.nodes()) {
    gathers += node->op_type() == "AllGather" ? 1 : 0;
    scatters += node->op_type() == "ReduceScatter" ? 1 : 0;
    if (node->op_type() == "SGD" && node->input(0)->name() == split.weight) {
      // Not averaged: the ranks' summed-loss gradient over 3.
      EXPECT_EQ(node->input(1)->producer()->op_type(), "Mul");
      divided++;
    }
  }
  EXPECT_EQ(divided, 1);
  EXPECT_EQ(gathers, 3);   // features, labels, and the loss's gradient (ReduceScatter's)
  EXPECT_EQ(scatters, 2);  // the loss, and the features' gradient (AllGather's)
  EXPECT_EQ(graph.find_value(split.weight)->shape(), (Shape{4, kEmbedding}));  // ceil(10 / 3) rows
}

TEST(MarginHead, PartialFcTrainsOnlyTheSampledCentres) {
  const int ranks = 2;
  const int64_t classes = 40;  // 20 rows each; K = max(ceil(0.25 * 20), 12) = 12
  HeadStep split = head_step(ranks, "softmax", 0.25, classes);
  EXPECT_EQ(split.sampled, 12);
  InProcessRanks world(split.plan, ranks);
  std::vector<Tensor> before;
  for (int r = 0; r < ranks; ++r) {
    Tensor shard = world.session(r).state(split.weight);
    nn::fill_class_centres(shard, classes, ranks, r, 11);
    before.push_back(shard.clone());
  }
  std::map<std::string, Tensor> feeds = batch(0);
  for (int64_t i = 0; i < kBatch; ++i) feeds["labels"].data<int64_t>()[i] = (i * 7) % classes;
  world.run(shares(feeds, ranks));
  for (int r = 0; r < ranks; ++r) {
    const ClassShard rows = class_shard(classes, ranks, r);
    const Tensor after = world.session(r).state(split.weight);
    int64_t changed = 0;
    for (int64_t row = 0; row < rows.width; ++row) {
      bool moved = false;
      for (int64_t d = 0; d < kEmbedding; ++d) {
        moved = moved || after.data<float>()[row * kEmbedding + d] != before[static_cast<size_t>(r)].data<float>()[row * kEmbedding + d];
      }
      changed += moved ? 1 : 0;
      bool positive = false;
      for (int64_t i = 0; i < kBatch; ++i) positive = positive || feeds["labels"].data<int64_t>()[i] == rows.start + row;
      if (positive) {
        EXPECT_TRUE(moved) << "rank " << r << " row " << row << " holds a class of the batch";
      }
    }
    // Every sampled centre gets a softmax gradient; the others none.
    EXPECT_EQ(changed, split.sampled) << "rank " << r;
  }
}

TEST(MarginHead, BadOptionsAreErrors) {
  GraphBuilder b("bad", 1);
  Var x = b.input("x", {DType::kFloat32, Shape{4, 3}});
  Var y = b.input("labels", {DType::kInt64, Shape{4}});
  nn::MarginHeadOptions options = nn::margin_preset("cosface");
  options.classes = 2;
  options.embedding = 3;
  options.ranks = 3;
  nn::margin_softmax_loss(b, x, y, options);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error()->message().find("2 classes cannot be sharded over 3 ranks"), std::string::npos) << b.error()->message();
  EXPECT_THROW(nn::margin_preset("sphereface"), Error);
}

}  // namespace
}  // namespace weir
