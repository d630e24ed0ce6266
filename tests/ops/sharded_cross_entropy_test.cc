// The per-rank part of the sharded softmax cross-entropy
// (ops/loss/sharded_cross_entropy.h), with 10 classes over 3 simulated ranks
// (4, 3 and 3 classes, shards padded to 4 columns of -inf): the ranks'
// parts add up to each row's full cross-entropy, and the gradient rule's
// shards put together are the full softmax's gradient (padding: zero).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "ops/loss/class_shards.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::run_op;

constexpr int64_t kClasses = 10, kRanks = 3, kRows = 6;

TEST(ShardedCrossEntropy, PartsAddUpToTheFullLossAndGradient) {
  std::mt19937 rng(17);
  std::normal_distribution<double> normal(0.0, 3.0);
  std::vector<double> logits(static_cast<size_t>(kRows * kClasses)), g(kRows);
  for (double& x : logits) x = normal(rng);
  for (double& x : g) x = normal(rng);
  std::vector<int64_t> labels(kRows);
  for (int64_t& label : labels) label = static_cast<int64_t>(rng() % kClasses);

  // The whole world's statistics, as the AllReduces give them.
  std::vector<double> row_max(kRows, -std::numeric_limits<double>::infinity()), exp_sum(kRows, 0.0);
  for (int64_t b = 0; b < kRows; ++b) {
    for (int64_t j = 0; j < kClasses; ++j) row_max[b] = std::max(row_max[b], logits[b * kClasses + j]);
    for (int64_t j = 0; j < kClasses; ++j) exp_sum[b] += std::exp(logits[b * kClasses + j] - row_max[b]);
  }
  std::vector<double> loss(kRows, 0.0), grad(static_cast<size_t>(kRows * kClasses), 0.0);
  for (int64_t r = 0; r < kRanks; ++r) {
    const ClassShard shard = class_shard(kClasses, kRanks, r);
    std::vector<double> mine(static_cast<size_t>(kRows * shard.width), -std::numeric_limits<double>::infinity());
    std::vector<int64_t> local(kRows);
    for (int64_t b = 0; b < kRows; ++b) {
      for (int64_t j = 0; j < shard.count; ++j) mine[b * shard.width + j] = logits[b * kClasses + shard.start + j];
      const int64_t column = labels[b] - shard.start;
      local[b] = column >= 0 && column < shard.count ? column : -1;
    }
    const std::vector<Tensor> in = {Tensor::from_vector(mine, {kRows, shard.width}), Tensor::from_vector(row_max, {kRows}),
                                    Tensor::from_vector(exp_sum, {kRows}), Tensor::from_vector(local, {kRows})};
    const Tensor part = run_op("ShardedCrossEntropy", in)[0];
    for (int64_t b = 0; b < kRows; ++b) {
      if (local[b] < 0) {
        EXPECT_EQ(part.data<double>()[b], 0.0);
      }
      loss[b] += part.data<double>()[b];
    }
    const Tensor dlogits = run_op("ShardedCrossEntropyGrad", {Tensor::from_vector(g, {kRows}), in[0], in[1], in[2], in[3]})[0];
    for (int64_t b = 0; b < kRows; ++b) {
      for (int64_t j = 0; j < shard.width; ++j) {
        const double value = dlogits.data<double>()[b * shard.width + j];
        if (j >= shard.count) {
          EXPECT_EQ(value, 0.0) << "padding, rank " << r;
        } else {
          grad[b * kClasses + shard.start + j] = value;
        }
      }
    }
  }
  for (int64_t b = 0; b < kRows; ++b) {
    const double want = -(logits[b * kClasses + labels[b]] - row_max[b] - std::log(exp_sum[b]));
    EXPECT_NEAR(loss[b], want, 1e-12) << "row " << b;
    for (int64_t j = 0; j < kClasses; ++j) {
      const double softmax = std::exp(logits[b * kClasses + j] - row_max[b]) / exp_sum[b];
      EXPECT_NEAR(grad[b * kClasses + j], g[b] * (softmax - (j == labels[b] ? 1.0 : 0.0)), 1e-12) << b << ", " << j;
    }
  }
}

TEST(ShardedCrossEntropy, BadShapesAndLabelsAreRefused) {
  const Tensor logits = Tensor::from_vector(std::vector<float>(8, 0.0f), {2, 4});
  const Tensor stats = Tensor::from_vector(std::vector<float>{0, 1}, {2});
  EXPECT_NE(testing::error_of("ShardedCrossEntropy", {logits, stats, stats, Tensor::from_vector(std::vector<int64_t>{0, 4}, {2})})
                .find("label 4 of row 1 is outside [-1, 4)"),
            std::string::npos);
  EXPECT_NE(testing::error_of("ShardedCrossEntropy", {logits, Tensor::from_vector(std::vector<float>{0}, {1}), stats,
                                                      Tensor::from_vector(std::vector<int64_t>{0, 1}, {2})})
                .find("row_max must be f32[2]"),
            std::string::npos);
}

}  // namespace
}  // namespace weir
