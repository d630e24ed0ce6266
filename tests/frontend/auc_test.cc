// roc_auc: hand-made cases with known areas, and random scores with many
// ties against the O(n^2) definition (every positive-negative pair, a tie
// counting half).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/splitmix.h"
#include "frontend/train/auc.h"

namespace weir {
namespace {

double pairwise_auc(const std::vector<float>& scores, const std::vector<float>& labels) {
  double wins = 0;
  int64_t pairs = 0;
  for (size_t p = 0; p < scores.size(); ++p) {
    if (labels[p] != 1) continue;
    for (size_t q = 0; q < scores.size(); ++q) {
      if (labels[q] != 0) continue;
      ++pairs;
      wins += scores[p] > scores[q] ? 1.0 : scores[p] == scores[q] ? 0.5 : 0.0;
    }
  }
  return wins / static_cast<double>(pairs);
}

TEST(RocAuc, HandMadeCases) {
  EXPECT_DOUBLE_EQ(roc_auc(std::vector<float>{0.1f, 0.2f, 0.8f, 0.9f}, std::vector<float>{0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(roc_auc(std::vector<float>{0.9f, 0.8f, 0.2f, 0.1f}, std::vector<float>{0, 0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(roc_auc(std::vector<float>{3, 3, 3, 3, 3}, std::vector<float>{0, 1, 0, 1, 1}), 0.5);
  // One positive tied with one of two negatives and above the other: (1 + 0.5) / 2.
  EXPECT_DOUBLE_EQ(roc_auc(std::vector<float>{1, 2, 2}, std::vector<float>{0, 0, 1}), 0.75);
  // Only the order matters: a monotone map of the scores keeps the area.
  std::vector<float> scores = {-2, 0.5f, 1, 1, 4, -1}, labels = {0, 1, 0, 1, 1, 0};
  std::vector<float> squashed;
  for (float s : scores) squashed.push_back(1 / (1 + std::exp(-s)));
  EXPECT_DOUBLE_EQ(roc_auc(scores, labels), roc_auc(squashed, labels));
  // -0 and +0 are the same score.
  EXPECT_DOUBLE_EQ(roc_auc(std::vector<float>{-0.0f, 0.0f}, std::vector<float>{1, 0}), 0.5);
}

TEST(RocAuc, MatchesThePairwiseDefinitionWithManyTies) {
  uint64_t state = 11;
  for (int trial = 0; trial < 40; ++trial) {
    const size_t n = 2 + splitmix64_next(state) % 300;
    const uint64_t levels = 1 + splitmix64_next(state) % 12;  // few distinct scores: many ties
    std::vector<float> scores(n), labels(n);
    for (size_t i = 0; i < n; ++i) {
      scores[i] = static_cast<float>(splitmix64_next(state) % levels) * 0.25f - 1;
      // Positives lean towards higher scores, so the area is not always near 0.5.
      labels[i] = splitmix64_unit(state) < 0.2 + 0.6 * (scores[i] + 1) / (0.25 * static_cast<double>(levels)) ? 1.0f : 0.0f;
    }
    labels[0] = 0;
    labels[1] = 1;
    EXPECT_NEAR(roc_auc(scores, labels), pairwise_auc(scores, labels), 1e-12) << "trial " << trial << ", n " << n;
  }
}

TEST(RocAuc, BadInputsAreErrorsThatSayWhy) {
  auto message = [](std::vector<float> scores, std::vector<float> labels) -> std::string {
    try {
      roc_auc(scores, labels);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message({1, 2, 3}, {0, 1}).find("3 scores but 2 labels"), std::string::npos);
  EXPECT_NE(message({1, 2, 3}, {0, 0.5f, 1}).find("label 1 is 0.5"), std::string::npos);
  EXPECT_NE(message({1, 2}, {0, 0}).find("no positive"), std::string::npos);
  EXPECT_NE(message({1, 2}, {1, 1}).find("no negative"), std::string::npos);
  EXPECT_NE(message({}, {}).find("no positive"), std::string::npos);
  EXPECT_NE(message({1, NAN}, {0, 1}).find("score 1 is NaN"), std::string::npos);
}

}  // namespace
}  // namespace weir
