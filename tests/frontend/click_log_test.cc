// The synthetic click log: its true model is learnable but not trivial (the
// true probability's AUC, the click rate), it is reproducible, the model does
// not depend on which examples are drawn, ids stay in their slots, and the
// Zipf draws touch a large share of the 10^6 ids.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include "core/error.h"
#include "frontend/data/click_log.h"
#include "frontend/train/auc.h"

namespace weir {
namespace {

std::span<const float> floats(const Tensor& t) { return {t.data<float>(), static_cast<size_t>(t.num_elements())}; }

double click_rate(const ClickLog& log) {
  double clicks = 0;
  for (float label : floats(log.labels)) clicks += label;
  return clicks / static_cast<double>(log.labels.num_elements());
}

TEST(ClickLog, TheTrueModelIsLearnableButNotTrivial) {
  ClickLogOptions options;
  options.examples = 200000;
  ClickLog log = synthetic_click_log(options);
  ASSERT_EQ(log.ids.sizes(), (std::vector<int64_t>{200000, 8}));
  ASSERT_EQ(log.dense.sizes(), (std::vector<int64_t>{200000, 4}));
  ASSERT_EQ(log.labels.sizes(), (std::vector<int64_t>{200000, 1}));
  ASSERT_EQ(log.true_probability.sizes(), (std::vector<int64_t>{200000}));
  const double auc = roc_auc(floats(log.true_probability), floats(log.labels));
  const double rate = click_rate(log);
  std::printf("true model on 200000 examples: AUC %.4f, click rate %.4f\n", auc, rate);
  EXPECT_GT(auc, 0.7);
  EXPECT_LT(auc, 0.85);
  EXPECT_GE(rate, 0.15);
  EXPECT_LE(rate, 0.35);
  // The labels follow the probabilities: their means agree.
  double mean_probability = 0;
  for (float p : floats(log.true_probability)) mean_probability += p;
  EXPECT_NEAR(mean_probability / 200000, rate, 0.005);
  for (float x : floats(log.dense)) {
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
  }
}

TEST(ClickLog, SameOptionsSameBits) {
  ClickLogOptions options{.examples = 5000};
  ClickLog a = synthetic_click_log(options), b = synthetic_click_log(options);
  EXPECT_TRUE(a.ids.bitwise_equal(b.ids));
  EXPECT_TRUE(a.dense.bitwise_equal(b.dense));
  EXPECT_TRUE(a.labels.bitwise_equal(b.labels));
  EXPECT_TRUE(a.true_probability.bitwise_equal(b.true_probability));
  options.sample_seed = 3;
  EXPECT_FALSE(synthetic_click_log(options).ids.bitwise_equal(a.ids));
}

TEST(ClickLog, TheModelDependsOnTheModelSeedOnly) {
  ClickLogOptions train_options{.examples = 2000, .sample_seed = 2};
  ClickLogOptions test_options{.examples = 300, .sample_seed = 3};
  ClickLog train = synthetic_click_log(train_options), test = synthetic_click_log(test_options);
  ClickLogOptions other_model = train_options;
  other_model.model_seed = 5;
  int differ = 0;
  for (int64_t i = 0; i < 300; ++i) {
    // An example of one log, scored with the other log's options: the same
    // probability, whichever sample_seed (and example count) drew it.
    std::span<const int64_t> ids(test.ids.data<int64_t>() + i * 8, 8);
    std::span<const float> dense(test.dense.data<float>() + i * 4, 4);
    const double logit = click_logit(train_options, ids, dense);
    EXPECT_EQ(static_cast<float>(1 / (1 + std::exp(-logit))), test.true_probability.data<float>()[i]) << "example " << i;
    EXPECT_EQ(logit, click_logit(test_options, ids, dense));
    differ += click_logit(other_model, ids, dense) != logit;
  }
  EXPECT_EQ(differ, 300) << "another model_seed is another model";
  // Frequent ids are shared: most of the test log's ids occur in the train log.
  std::vector<bool> seen(1000000);
  for (int64_t id : std::span<const int64_t>(train.ids.data<int64_t>(), 16000)) seen[static_cast<size_t>(id)] = true;
  int shared = 0;
  for (int64_t id : std::span<const int64_t>(test.ids.data<int64_t>(), 2400)) shared += seen[static_cast<size_t>(id)];
  EXPECT_GT(shared, 2400 / 2);
}

TEST(ClickLog, IdsStayInTheirSlotsAndCoverMuchOfTheIdSpace) {
  ClickLogOptions options{.examples = 1000000};
  const auto start = std::chrono::steady_clock::now();
  ClickLog log = synthetic_click_log(options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<bool> seen(static_cast<size_t>(options.slots * options.ids_per_slot));
  int64_t small_ids = 0;  // draws of an id in the first 1% of its slot
  const int64_t* ids = log.ids.data<int64_t>();
  for (int64_t i = 0; i < options.examples; ++i) {
    for (int s = 0; s < options.slots; ++s) {
      const int64_t id = ids[i * options.slots + s], local = id - s * options.ids_per_slot;
      ASSERT_GE(local, 0) << "example " << i << " slot " << s;
      ASSERT_LT(local, options.ids_per_slot) << "example " << i << " slot " << s;
      seen[static_cast<size_t>(id)] = true;
      small_ids += local < options.ids_per_slot / 100;
    }
  }
  int64_t distinct = 0;
  for (bool b : seen) distinct += b;
  std::printf("10^6 examples: %lld distinct ids of %lld, generated in %.2f s\n", static_cast<long long>(distinct),
              static_cast<long long>(seen.size()), seconds);
  EXPECT_GT(distinct, 300000);
  // The rank -> id map scatters the frequent ids: the first 1% of the slots'
  // ids get about 1% of the draws, nowhere near the top 1% of ranks' share
  // (over 40%).
  EXPECT_LT(small_ids, options.examples * options.slots / 10);
}

TEST(ClickLog, BadOptionsAreErrors) {
  for (ClickLogOptions bad : {ClickLogOptions{.examples = -1}, ClickLogOptions{.slots = 0}, ClickLogOptions{.ids_per_slot = 0},
                              ClickLogOptions{.dense_features = -1}, ClickLogOptions{.zipf_exponent = -1},
                              ClickLogOptions{.zipf_exponent = NAN}, ClickLogOptions{.weight_scale = INFINITY}}) {
    EXPECT_THROW(synthetic_click_log(bad), Error);
  }
  try {
    synthetic_click_log(ClickLogOptions{.slots = 0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("slots must be >= 1, got 0"), std::string::npos) << e.what();
  }
  ClickLogOptions options;
  std::vector<int64_t> ids = {0, 125000, 250000, 375000, 500000, 625000, 750000, 875000};
  std::vector<float> dense = {0.5f, 0.5f, 0.5f, 0.5f};
  EXPECT_NO_THROW(click_logit(options, ids, dense));
  EXPECT_THROW(click_logit(options, std::span(ids).first(7), dense), Error);
  EXPECT_THROW(click_logit(options, ids, std::span(dense).first(3)), Error);
  ids[2] = 1;  // slot 0's id in slot 2
  EXPECT_THROW(click_logit(options, ids, dense), Error);
  // No examples: empty tensors of the right shapes.
  ClickLog empty = synthetic_click_log(ClickLogOptions{.examples = 0});
  EXPECT_EQ(empty.ids.sizes(), (std::vector<int64_t>{0, 8}));
}

}  // namespace
}  // namespace weir
