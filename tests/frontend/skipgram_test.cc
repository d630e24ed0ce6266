// word2vec's data: the synthetic corpus (reproducible, Zipf-like, with
// topical structure), reading a text file into ids by frequency, and the
// skip-gram examples (contexts within the window, negatives following
// count^0.75, deterministic per seed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "core/splitmix.h"
#include "frontend/data/skipgram.h"
#include "tests/test_util.h"

namespace weir {
namespace {

std::vector<int64_t> count_words(const std::vector<int64_t>& tokens, int64_t vocabulary) {
  std::vector<int64_t> counts(static_cast<size_t>(vocabulary));
  for (int64_t t : tokens) ++counts[static_cast<size_t>(t)];
  return counts;
}

TEST(ZipfCorpus, ReproducibleZipfLikeAndTopical) {
  const std::vector<int64_t> corpus = zipf_corpus(2000, 200000, 1.0, 7);
  ASSERT_EQ(corpus.size(), 200000u);
  EXPECT_EQ(zipf_corpus(2000, 200000, 1.0, 7), corpus);
  EXPECT_NE(zipf_corpus(2000, 200000, 1.0, 8), corpus);
  for (int64_t t : corpus) ASSERT_TRUE(t >= 0 && t < 2000) << t;
  // Low ids are the frequent words: count(id w) ~ 1/(w+1).
  std::vector<int64_t> counts = count_words(corpus, 2000);
  EXPECT_GT(counts[0], counts[9]);
  EXPECT_GT(counts[9], counts[99]);
  EXPECT_GT(counts[99], counts[999]);
  const double slope = std::log(static_cast<double>(counts[9] + counts[10] + counts[11]) / (counts[99] + counts[100] + counts[101])) /
                       std::log(100.0 / 10.0);
  EXPECT_NEAR(slope, 1.0, 0.15) << "log-log slope of the frequencies";
  // Topical: a word's neighbours in its sentence are more often the same
  // neighbours than chance. Measure it as the share of distinct words in a
  // sentence of 20 tokens against the same count for a shuffled corpus.
  auto distinct_per_sentence = [](const std::vector<int64_t>& tokens) {
    double total = 0;
    for (size_t s = 0; s + 20 <= tokens.size(); s += 20) {
      total += static_cast<double>(std::set<int64_t>(tokens.begin() + static_cast<ptrdiff_t>(s),
                                                      tokens.begin() + static_cast<ptrdiff_t>(s + 20)).size());
    }
    return total;
  };
  std::vector<int64_t> shuffled = corpus;
  uint64_t state = 3;
  for (size_t i = shuffled.size(); i > 1; --i) std::swap(shuffled[i - 1], shuffled[splitmix64_next(state) % i]);
  EXPECT_LT(distinct_per_sentence(corpus), 0.95 * distinct_per_sentence(shuffled));
  EXPECT_THROW(zipf_corpus(0, 10, 1.0, 1), Error);
  EXPECT_THROW(zipf_corpus(10, -1, 1.0, 1), Error);
  EXPECT_THROW(zipf_corpus(10, 10, -1.0, 1), Error);
  EXPECT_TRUE(zipf_corpus(1, 5, 1.0, 1) == std::vector<int64_t>(5, 0));
}

TEST(TextCorpus, IdsByCountThenFirstAppearance) {
  testing::ScratchDir dir;
  std::ofstream(dir / "text.txt") << "The cat sat\ton the mat.\n\nthe CAT  ran\r\nrare dog dog";
  TextCorpus corpus = read_text_corpus(dir / "text.txt", 1);
  // the: 3, cat: 2, dog: 2, then sat, on, mat., ran, rare once each, by first appearance.
  EXPECT_EQ(corpus.words, (std::vector<std::string>{"the", "cat", "dog", "sat", "on", "mat.", "ran", "rare"}));
  EXPECT_EQ(corpus.counts, (std::vector<int64_t>{3, 2, 2, 1, 1, 1, 1, 1}));
  EXPECT_EQ(corpus.tokens, (std::vector<int64_t>{0, 1, 3, 4, 0, 5, 0, 1, 6, 7, 2, 2}));
  TextCorpus frequent = read_text_corpus(dir / "text.txt", 2);
  EXPECT_EQ(frequent.words, (std::vector<std::string>{"the", "cat", "dog"}));
  EXPECT_EQ(frequent.tokens, (std::vector<int64_t>{0, 1, 0, 0, 1, 2, 2})) << "rare words leave the stream";
  EXPECT_EQ(read_text_corpus(dir / "text.txt", 0).words, corpus.words);
}

TEST(TextCorpus, ErrorsNameTheFile) {
  testing::ScratchDir dir;
  auto message = [](const std::filesystem::path& path, int64_t min_count) -> std::string {
    try {
      read_text_corpus(path, min_count);
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), path.string());
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(dir / "missing.txt", 1).find("no such file"), std::string::npos);
  EXPECT_NE(message(dir.path(), 1).find("not a regular file"), std::string::npos);
  std::ofstream(dir / "blank.txt") << " \n\t ";
  EXPECT_NE(message(dir / "blank.txt", 1).find("no words"), std::string::npos);
  std::ofstream(dir / "few.txt") << "a b c a";
  EXPECT_NE(message(dir / "few.txt", 3).find("at least min_count = 3"), std::string::npos);
  EXPECT_NE(message(dir / "few.txt", -1).find("min_count must be >= 0"), std::string::npos);
}

TEST(SkipGram, ContextsLieWithinTheWindow) {
  // Every word once: a word's id is its position, so distances can be read off.
  std::vector<int64_t> tokens(500);
  for (int64_t i = 0; i < 500; ++i) tokens[static_cast<size_t>(i)] = (i * 7) % 500;
  std::vector<int64_t> position(500);
  for (int64_t i = 0; i < 500; ++i) position[static_cast<size_t>(tokens[static_cast<size_t>(i)])] = i;
  const SkipGramOptions options{.window = 4, .negatives = 3, .seed = 5};
  SkipGramExamples examples = skipgram_examples(tokens, std::vector<int64_t>(500, 1), options);
  const int64_t n = examples.centres.sizes()[0];
  ASSERT_EQ(examples.targets.sizes(), (std::vector<int64_t>{n, 4}));
  ASSERT_EQ(examples.labels.sizes(), (std::vector<int64_t>{n, 4}));
  std::map<int64_t, int> contexts;  // centre position -> its examples
  std::set<int64_t> distances;
  int64_t last_centre = -1;
  for (int64_t e = 0; e < n; ++e) {
    const int64_t centre = position[static_cast<size_t>(examples.centres.data<int64_t>()[e])];
    const int64_t target = position[static_cast<size_t>(examples.targets.data<int64_t>()[e * 4])];
    const int64_t distance = std::abs(target - centre);
    ASSERT_GE(distance, 1) << "example " << e;
    ASSERT_LE(distance, options.window) << "example " << e;
    ASSERT_GE(centre, last_centre) << "examples come in corpus order";
    last_centre = centre;
    distances.insert(distance);
    ++contexts[centre];
    EXPECT_EQ(examples.labels.data<float>()[e * 4], 1.0f);
    for (int k = 1; k < 4; ++k) EXPECT_EQ(examples.labels.data<float>()[e * 4 + k], 0.0f);
  }
  EXPECT_EQ(contexts.size(), 500u) << "every token is a centre";
  EXPECT_EQ(distances.size(), 4u) << "every distance 1..window occurs";
  // Reduced windows: on average b = 2.5, so about 5 contexts per token, not 8.
  EXPECT_NEAR(static_cast<double>(n) / 500, 5.0, 0.5);
}

TEST(SkipGram, DeterministicPerSeed) {
  const std::vector<int64_t> tokens = zipf_corpus(300, 5000, 1.0, 2);
  const std::vector<int64_t> counts = count_words(tokens, 300);
  SkipGramExamples a = skipgram_examples(tokens, counts, {.seed = 4});
  SkipGramExamples b = skipgram_examples(tokens, counts, {.seed = 4});
  SkipGramExamples c = skipgram_examples(tokens, counts, {.seed = 5});
  EXPECT_TRUE(a.centres.bitwise_equal(b.centres));
  EXPECT_TRUE(a.targets.bitwise_equal(b.targets));
  EXPECT_TRUE(a.labels.bitwise_equal(b.labels));
  EXPECT_FALSE(a.targets.bitwise_equal(c.targets));
}

TEST(SkipGram, NegativesFollowTheCountsToThePowerThreeQuarters) {
  const std::vector<int64_t> counts = {1000, 400, 160, 64, 25, 10, 4, 1, 0, 300};
  std::vector<int64_t> tokens;
  for (int i = 0; i < 20000; ++i) tokens.push_back(i % 8);
  SkipGramExamples examples = skipgram_examples(tokens, counts, {.window = 2, .negatives = 6, .seed = 9});
  std::vector<double> seen(counts.size());
  const int64_t n = examples.centres.sizes()[0];
  for (int64_t e = 0; e < n; ++e) {
    for (int k = 1; k <= 6; ++k) seen[static_cast<size_t>(examples.targets.data<int64_t>()[e * 7 + k])] += 1;
  }
  double total_weight = 0;
  for (int64_t c : counts) total_weight += std::pow(static_cast<double>(c), 0.75);
  const double draws = static_cast<double>(n) * 6;
  double chi_square = 0;
  for (size_t v = 0; v < counts.size(); ++v) {
    const double expected = draws * std::pow(static_cast<double>(counts[v]), 0.75) / total_weight;
    if (expected == 0) {
      EXPECT_EQ(seen[v], 0) << "a word never seen is never a negative";
      continue;
    }
    chi_square += (seen[v] - expected) * (seen[v] - expected) / expected;
  }
  // 8 degrees of freedom: P(chi^2 > 30) is about 2e-4.
  EXPECT_LT(chi_square, 30) << "over " << draws << " draws";
  // Power 0: uniform over the words that occur.
  SkipGramExamples uniform = skipgram_examples(tokens, counts, {.window = 1, .negatives = 4, .unigram_power = 0, .seed = 1});
  std::vector<double> flat(counts.size());
  for (int64_t e = 0; e < uniform.centres.sizes()[0]; ++e) {
    for (int k = 1; k <= 4; ++k) flat[static_cast<size_t>(uniform.targets.data<int64_t>()[e * 5 + k])] += 1;
  }
  EXPECT_EQ(flat[8], 0);
  const double each = static_cast<double>(uniform.centres.sizes()[0]) * 4 / 9;
  for (size_t v = 0; v < counts.size(); ++v) {
    if (v != 8) {
      EXPECT_NEAR(flat[v], each, 5 * std::sqrt(each)) << "word " << v;
    }
  }
}

TEST(SkipGram, BadArgumentsAreErrors) {
  const std::vector<int64_t> tokens = {0, 1, 2, 1};
  const std::vector<int64_t> counts = {1, 2, 1};
  EXPECT_THROW(skipgram_examples(tokens, counts, {.window = 0}), Error);
  EXPECT_THROW(skipgram_examples(tokens, counts, {.negatives = -1}), Error);
  EXPECT_THROW(skipgram_examples(tokens, counts, {.unigram_power = NAN}), Error);
  EXPECT_THROW(skipgram_examples(tokens, std::vector<int64_t>{1, 2}, {}), Error) << "token 2 outside the vocabulary";
  EXPECT_THROW(skipgram_examples(tokens, std::vector<int64_t>{0, 0, 0}, {}), Error);
  EXPECT_THROW(skipgram_examples(tokens, std::vector<int64_t>{1, -2, 1}, {}), Error);
  // One token: no context, no examples.
  SkipGramExamples none = skipgram_examples(std::vector<int64_t>{1}, counts, {});
  EXPECT_EQ(none.targets.sizes(), (std::vector<int64_t>{0, 6}));
}

}  // namespace
}  // namespace weir
