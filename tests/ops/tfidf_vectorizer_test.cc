// TfIdfVectorizer against a brute-force reference that lists every n-gram of
// each row explicitly (every length, every skip) and compares it with every
// pool entry; hand-checked cases from ONNX's description; attribute errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>

#include "core/error.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

using testing::error_of;
using testing::make_tensor;
using testing::run_op;
using testing::to_doubles;

struct Config {
  int64_t min_gram = 1, max_gram = 2, max_skip = 0;
  std::string mode = "TF";
  std::vector<std::vector<int64_t>> pool;  // n-grams, ordered by length
  std::vector<int64_t> indexes;
  std::vector<double> weights;              // empty: all ones

  std::map<std::string, Attribute> attributes() const {
    std::vector<int64_t> flat, counts;
    size_t length = 0;
    for (const auto& gram : pool) {
      while (length < gram.size()) {
        counts.push_back(static_cast<int64_t>(flat.size()));
        ++length;
      }
      flat.insert(flat.end(), gram.begin(), gram.end());
    }
    if (counts.empty()) counts.push_back(0);
    std::map<std::string, Attribute> attrs = {
        {"min_gram_length", Attribute(min_gram)}, {"max_gram_length", Attribute(max_gram)},
        {"max_skip_count", Attribute(max_skip)},  {"mode", Attribute(mode)},
        {"ngram_counts", Attribute(counts)},      {"ngram_indexes", Attribute(indexes)},
        {"pool_int64s", Attribute(flat)}};
    if (!weights.empty()) attrs["weights"] = Attribute(weights);
    return attrs;
  }
};

// Every n-gram of `row`: lengths min..max, items start + j·(skip + 1) for
// skip 0..max_skip; a unigram once per position (not once per skip).
std::vector<std::vector<int64_t>> all_ngrams(const std::vector<int64_t>& row, const Config& c) {
  std::vector<std::vector<int64_t>> grams;
  auto columns = static_cast<int64_t>(row.size());
  for (int64_t n = c.min_gram; n <= c.max_gram; ++n) {
    int64_t last_skip = n == 1 ? 0 : c.max_skip;
    for (int64_t skip = 0; skip <= last_skip; ++skip) {
      for (int64_t start = 0; start + (n - 1) * (skip + 1) < columns; ++start) {
        std::vector<int64_t> gram;
        for (int64_t j = 0; j < n; ++j) gram.push_back(row[static_cast<size_t>(start + j * (skip + 1))]);
        grams.push_back(gram);
      }
    }
  }
  return grams;
}

std::vector<double> reference(const std::vector<int64_t>& x, int64_t rows, const Config& c) {
  int64_t size = *std::max_element(c.indexes.begin(), c.indexes.end()) + 1;
  int64_t columns = static_cast<int64_t>(x.size()) / rows;
  std::vector<double> y(static_cast<size_t>(rows * size), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> row(x.begin() + r * columns, x.begin() + (r + 1) * columns);
    std::vector<std::vector<int64_t>> grams = all_ngrams(row, c);
    for (size_t i = 0; i < c.pool.size(); ++i) {
      auto count = static_cast<double>(std::count(grams.begin(), grams.end(), c.pool[i]));
      double weight = c.weights.empty() ? 1.0 : c.weights[i];
      double value = c.mode == "TF" ? count : c.mode == "IDF" ? std::min(count, 1.0) * weight : count * weight;
      y[static_cast<size_t>(r * size + c.indexes[i])] += value;
    }
  }
  return y;
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

TEST(TfIdfVectorizerKernels, MatchesBruteForceOnRandomConfigurations) {
  std::mt19937 engine(7);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(engine); };
  int checked_nonzero = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Config c;
    c.min_gram = uniform(1, 3);
    c.max_gram = uniform(c.min_gram, 3);
    c.max_skip = uniform(0, 4);
    c.mode = std::vector<std::string>{"TF", "IDF", "TFIDF"}[static_cast<size_t>(trial % 3)];
    // n-grams of lengths 1..4 over a small alphabet (so that they occur);
    // some lengths empty, some n-grams longer than max_gram_length.
    int64_t alphabet = uniform(2, 5), offset = uniform(-3, 100);
    for (int64_t n = 1; n <= 4; ++n) {
      int64_t how_many = uniform(0, 4);
      for (int64_t k = 0; k < how_many; ++k) {
        std::vector<int64_t> gram;
        for (int64_t j = 0; j < n; ++j) gram.push_back(offset + uniform(0, alphabet - 1));
        c.pool.push_back(gram);
      }
    }
    if (c.pool.empty()) c.pool.push_back({offset});
    // Distinct output coordinates with gaps, in shuffled order.
    std::vector<int64_t> coordinates(c.pool.size() * 2);
    std::iota(coordinates.begin(), coordinates.end(), 0);
    std::shuffle(coordinates.begin(), coordinates.end(), engine);
    c.indexes.assign(coordinates.begin(), coordinates.begin() + static_cast<std::ptrdiff_t>(c.pool.size()));
    if (trial % 2 == 1) {
      for (size_t i = 0; i < c.pool.size(); ++i) c.weights.push_back(0.25 * static_cast<double>(uniform(1, 12)));
    }
    bool batched = trial % 4 >= 2;
    int64_t rows = batched ? uniform(1, 3) : 1, columns = uniform(0, 12);
    std::vector<int64_t> x(static_cast<size_t>(rows * columns));
    for (int64_t& v : x) v = offset + uniform(0, alphabet - 1);
    std::vector<int64_t> sizes = batched ? std::vector<int64_t>{rows, columns} : std::vector<int64_t>{columns};
    std::vector<double> want = reference(x, rows, c);
    for (DType dtype : {DType::kInt32, DType::kInt64}) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " mode " + c.mode + " " + std::string(dtype_name(dtype)));
      Tensor y = run_op("TfIdfVectorizer", {make_tensor(dtype, as_doubles(x), sizes)}, c.attributes())[0];
      int64_t size = *std::max_element(c.indexes.begin(), c.indexes.end()) + 1;
      ASSERT_EQ(y.dtype(), DType::kFloat32);
      ASSERT_EQ(y.sizes(), batched ? std::vector<int64_t>({rows, size}) : std::vector<int64_t>({size}));
      std::vector<double> got = to_doubles(y);
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "at " << i;
    }
    if (std::any_of(want.begin(), want.end(), [](double v) { return v != 0.0; })) ++checked_nonzero;
  }
  EXPECT_GT(checked_nonzero, 30);  // the configurations do find n-grams
}

TEST(TfIdfVectorizerKernels, DescriptionExamples) {
  // [94, 17, 36, 12, 28] with skip 2 has bigrams [94, 12] and [17, 28]; skip 0 [94, 17].
  Config c;
  c.min_gram = 2, c.max_gram = 2, c.max_skip = 2;
  c.pool = {{94, 12}, {17, 28}, {94, 17}, {94, 36}, {12, 94}};
  c.indexes = {4, 0, 1, 2, 3};
  Tensor x = make_tensor(DType::kInt64, {94, 17, 36, 12, 28}, {5});
  EXPECT_EQ(to_doubles(run_op("TfIdfVectorizer", {x}, c.attributes())[0]), (std::vector<double>{1, 1, 1, 0, 1}));
  c.max_skip = 0;
  EXPECT_EQ(to_doubles(run_op("TfIdfVectorizer", {x}, c.attributes())[0]), (std::vector<double>{0, 1, 0, 0, 0}));
}

TEST(TfIdfVectorizerKernels, UnigramsCountOncePerPositionAndModesWeigh) {
  Config c;
  c.min_gram = 1, c.max_gram = 2, c.max_skip = 3;
  c.pool = {{5}, {5, 5}};
  c.indexes = {0, 1};
  Tensor x = make_tensor(DType::kInt32, {5, 5, 5, 7}, {1, 4});
  // Three 5s; bigrams [5, 5] at skip 0 (twice) and skip 1 (once).
  EXPECT_EQ(to_doubles(run_op("TfIdfVectorizer", {x}, c.attributes())[0]), (std::vector<double>{3, 3}));
  c.weights = {0.5, 2.0};
  c.mode = "IDF";
  EXPECT_EQ(to_doubles(run_op("TfIdfVectorizer", {x}, c.attributes())[0]), (std::vector<double>{0.5, 2.0}));
  c.mode = "TFIDF";
  EXPECT_EQ(to_doubles(run_op("TfIdfVectorizer", {x}, c.attributes())[0]), (std::vector<double>{1.5, 6.0}));
  c.mode = "TF";  // weights do not apply to TF
  EXPECT_EQ(to_doubles(run_op("TfIdfVectorizer", {x}, c.attributes())[0]), (std::vector<double>{3, 3}));
}

void expect_error(const std::map<std::string, Attribute>& attrs, const std::string& words) {
  Tensor x = make_tensor(DType::kInt64, {1, 2, 3}, {3});
  std::string message = error_of("TfIdfVectorizer", {x}, attrs);
  EXPECT_NE(message.find(words), std::string::npos) << message;
}

TEST(TfIdfVectorizerKernels, RefusesBadAttributes) {
  Config c;
  c.pool = {{1}, {2}, {1, 2}};
  c.indexes = {0, 1, 2};
  std::map<std::string, Attribute> base = c.attributes();
  Tensor x = make_tensor(DType::kInt64, {1, 2, 3}, {3});
  EXPECT_EQ(to_doubles(run_op("TfIdfVectorizer", {x}, base)[0]), (std::vector<double>{1, 1, 1}));

  auto strings = base;
  strings.erase("pool_int64s");
  strings["pool_strings"] = Attribute(std::vector<std::string>{"a", "b", "a", "b"});
  EXPECT_THROW(run_op("TfIdfVectorizer", {x}, strings), Error);
  expect_error(strings, "pool_strings is not supported");

  auto odd_bigrams = base;  // bigrams start at 1: three items, not a multiple of 2
  odd_bigrams["ngram_counts"] = Attribute(std::vector<int64_t>{0, 1});
  EXPECT_THROW(run_op("TfIdfVectorizer", {x}, odd_bigrams), Error);
  expect_error(odd_bigrams, "not a multiple of 2");

  auto past_pool = base;
  past_pool["ngram_counts"] = Attribute(std::vector<int64_t>{0, 9});
  expect_error(past_pool, "ngram_counts must start at 0");

  auto short_indexes = base;
  short_indexes["ngram_indexes"] = Attribute(std::vector<int64_t>{0, 1});
  EXPECT_THROW(run_op("TfIdfVectorizer", {x}, short_indexes), Error);
  expect_error(short_indexes, "give 3 n-grams but ngram_indexes has 2");

  auto negative_index = base;
  negative_index["ngram_indexes"] = Attribute(std::vector<int64_t>{0, -1, 2});
  expect_error(negative_index, "ngram_indexes must not be negative");

  auto bad_weights = base;
  bad_weights["weights"] = Attribute(std::vector<double>{1.0, 2.0});
  expect_error(bad_weights, "weights has 2 elements");

  auto bad_mode = base;
  bad_mode["mode"] = Attribute("BM25");
  expect_error(bad_mode, "mode 'BM25' is not one of TF, IDF, TFIDF");

  auto bad_lengths = base;
  bad_lengths["min_gram_length"] = Attribute(int64_t{3});
  expect_error(bad_lengths, "min_gram_length <= max_gram_length");

  auto negative_skip = base;
  negative_skip["max_skip_count"] = Attribute(int64_t{-1});
  expect_error(negative_skip, "max_skip_count must not be negative");

  Tensor cube = make_tensor(DType::kInt64, {1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  EXPECT_THROW(run_op("TfIdfVectorizer", {cube}, base), Error);
  EXPECT_NE(error_of("TfIdfVectorizer", {cube}, base).find("must be [C] or [N, C]"), std::string::npos);
}

}  // namespace
}  // namespace weir
