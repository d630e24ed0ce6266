#include "frontend/data/skipgram.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numeric>
#include <unordered_map>

#include "core/error.h"
#include "core/regular_file.h"
#include "core/splitmix.h"

namespace weir {

namespace {

constexpr int64_t kSentenceLength = 20;
constexpr double kTopicShare = 0.8;  // tokens drawn from the sentence's topic; the rest from the whole vocabulary
constexpr int64_t kWordsPerTopic = 32;
constexpr int64_t kMaxTopics = 64;

// Key domains, so the streams of one seed never coincide.
constexpr uint64_t kShuffleDomain = 0x243F6A8885A308D3ULL;
constexpr uint64_t kCorpusDomain = 0x13198A2E03707344ULL;
constexpr uint64_t kWindowDomain = 0xA4093822299F31D0ULL;
constexpr uint64_t kNegativeDomain = 0x082EFA98EC4E6C89ULL;


// Draws index i with probability weights[i] / sum, by bisection of the running sums.
class CumulativeTable {
 public:
  explicit CumulativeTable(const std::vector<double>& weights) : cumulative_(weights.size()) {
    double sum = 0;
    for (size_t i = 0; i < weights.size(); ++i) cumulative_[i] = sum += weights[i];
  }
  double total() const { return cumulative_.back(); }
  size_t draw(double unit) const {
    auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), unit * cumulative_.back());
    return std::min<size_t>(static_cast<size_t>(it - cumulative_.begin()), cumulative_.size() - 1);  // rounding at the very end
  }

 private:
  std::vector<double> cumulative_;
};

// Walker's alias method, built by Vose's stable variant: column i is taken
// with probability probability_[i] after a uniform column pick, else
// alias_[i]. Built in a fixed order, so the table (and every draw) is the
// same on every platform.
class AliasTable {
 public:
  explicit AliasTable(const std::vector<double>& weights) : probability_(weights.size()), alias_(weights.size()) {
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    const double n = static_cast<double>(weights.size());
    std::vector<double> scaled(weights.size());
    std::vector<int64_t> small, large;
    for (size_t i = 0; i < weights.size(); ++i) {
      scaled[i] = weights[i] * n / total;
      (scaled[i] < 1 ? small : large).push_back(static_cast<int64_t>(i));
    }
    while (!small.empty() && !large.empty()) {
      const int64_t s = small.back(), l = large.back();
      small.pop_back();
      probability_[static_cast<size_t>(s)] = scaled[static_cast<size_t>(s)];
      alias_[static_cast<size_t>(s)] = l;
      scaled[static_cast<size_t>(l)] -= 1 - scaled[static_cast<size_t>(s)];
      if (scaled[static_cast<size_t>(l)] < 1) {
        large.pop_back();
        small.push_back(l);
      }
    }
    // What is left is 1 up to rounding: those columns keep themselves.
    for (const std::vector<int64_t>* rest : {&large, &small}) {
      for (int64_t i : *rest) {
        probability_[static_cast<size_t>(i)] = 1;
        alias_[static_cast<size_t>(i)] = i;
      }
    }
  }

  int64_t draw(uint64_t& state) const {
    const double x = splitmix64_unit(state) * static_cast<double>(probability_.size());
    const int64_t column = std::min<int64_t>(static_cast<int64_t>(x), std::ssize(probability_) - 1);
    return x - static_cast<double>(column) < probability_[static_cast<size_t>(column)] ? column
                                                                                         : alias_[static_cast<size_t>(column)];
  }

 private:
  std::vector<double> probability_;
  std::vector<int64_t> alias_;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

std::vector<int64_t> zipf_corpus(int64_t vocabulary, int64_t tokens, double exponent, uint64_t seed) {
  if (vocabulary < 1 || tokens < 0 || !std::isfinite(exponent) || exponent < 0) {
    throw Error(ErrorKind::kInvalidArgument, "zipf_corpus needs vocabulary >= 1, tokens >= 0 and a finite exponent >= 0; got "
                                             "vocabulary " + std::to_string(vocabulary) + ", tokens " + std::to_string(tokens) +
                                             ", exponent " + std::to_string(exponent));
  }
  const int64_t topics = std::clamp<int64_t>(vocabulary / kWordsPerTopic, 1, kMaxTopics);
  // Word id w has Zipf weight 1/(w+1)^exponent. Deal a seeded shuffle of the
  // ids into the topics; a topic's words keep their Zipf weights.
  std::vector<double> zipf(static_cast<size_t>(vocabulary));
  for (size_t w = 0; w < zipf.size(); ++w) zipf[w] = std::pow(static_cast<double>(w + 1), -exponent);
  std::vector<int64_t> shuffled(static_cast<size_t>(vocabulary));
  std::iota(shuffled.begin(), shuffled.end(), 0);
  uint64_t shuffle_state = splitmix64_keyed(seed, kShuffleDomain, 0);
  for (size_t i = shuffled.size(); i > 1; --i) std::swap(shuffled[i - 1], shuffled[splitmix64_next(shuffle_state) % i]);
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(topics));
  for (size_t i = 0; i < shuffled.size(); ++i) members[i % static_cast<size_t>(topics)].push_back(shuffled[i]);
  std::vector<CumulativeTable> in_topic;
  std::vector<double> topic_mass;
  for (auto& words : members) {
    std::sort(words.begin(), words.end());
    std::vector<double> weights;
    for (int64_t w : words) weights.push_back(zipf[static_cast<size_t>(w)]);
    in_topic.emplace_back(weights);
    topic_mass.push_back(in_topic.back().total());
  }
  // A sentence's topic with probability proportional to the topic's Zipf
  // mass: then P(word) = sum over topics of P(topic) P(word | topic) is the
  // word's Zipf probability exactly, and so is the background's.
  const CumulativeTable topic_table(topic_mass);
  const CumulativeTable global(zipf);

  std::vector<int64_t> corpus(static_cast<size_t>(tokens));
  uint64_t state = splitmix64_keyed(seed, kCorpusDomain, 0);
  size_t topic = 0;
  for (int64_t i = 0; i < tokens; ++i) {
    if (i % kSentenceLength == 0) topic = topic_table.draw(splitmix64_unit(state));
    if (splitmix64_unit(state) < kTopicShare) {
      corpus[static_cast<size_t>(i)] = members[topic][in_topic[topic].draw(splitmix64_unit(state))];
    } else {
      corpus[static_cast<size_t>(i)] = static_cast<int64_t>(global.draw(splitmix64_unit(state)));
    }
  }
  return corpus;
}

TextCorpus read_text_corpus(const std::filesystem::path& path, int64_t min_count) {
  if (min_count < 0) {
    throw Error(ErrorKind::kInvalidArgument, "read_text_corpus: min_count must be >= 0, got " + std::to_string(min_count))
        .with_file(path.string());
  }
  RegularFile file = open_regular_file(path);
  if (!file) throw Error(ErrorKind::kIo, file.why + " (a text corpus was expected)").with_file(path.string());

  // Words by first appearance; the stream as first-appearance indices.
  std::unordered_map<std::string, int64_t> index;
  std::vector<std::string> words;
  std::vector<int64_t> counts;
  std::vector<int64_t> stream;
  std::string word;
  auto finish_word = [&] {
    if (word.empty()) return;
    auto [it, inserted] = index.try_emplace(word, std::ssize(words));
    if (inserted) {
      words.push_back(word);
      counts.push_back(0);
    }
    ++counts[static_cast<size_t>(it->second)];
    stream.push_back(it->second);
    word.clear();
  };
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t got = ::read(file.fd(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(ErrorKind::kIo, std::string("cannot read: ") + std::strerror(errno)).with_file(path.string());
    if (got == 0) break;
    for (ssize_t i = 0; i < got; ++i) {
      const char c = buffer[static_cast<size_t>(i)];
      if (is_space(c)) {
        finish_word();
      } else {
        word.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
      }
    }
  }
  finish_word();  // a last word without trailing whitespace

  // Ids by descending count; a stable sort of the first-appearance order
  // breaks ties by first appearance.
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < std::ssize(words); ++i) {
    if (counts[static_cast<size_t>(i)] >= min_count) kept.push_back(i);
  }
  if (kept.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                words.empty() ? std::string("the text corpus has no words")
                              : "no word of the text corpus occurs at least min_count = " + std::to_string(min_count) +
                                    " times (" + std::to_string(words.size()) + " distinct words; lower min_count)")
        .with_file(path.string());
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [&](int64_t a, int64_t b) { return counts[static_cast<size_t>(a)] > counts[static_cast<size_t>(b)]; });
  TextCorpus corpus;
  std::vector<int64_t> id_of(words.size(), -1);
  for (int64_t id = 0; id < std::ssize(kept); ++id) {
    const size_t old = static_cast<size_t>(kept[static_cast<size_t>(id)]);
    id_of[old] = id;
    corpus.words.push_back(std::move(words[old]));
    corpus.counts.push_back(counts[old]);
  }
  for (int64_t first : stream) {
    if (id_of[static_cast<size_t>(first)] >= 0) corpus.tokens.push_back(id_of[static_cast<size_t>(first)]);
  }
  return corpus;
}

SkipGramExamples skipgram_examples(std::span<const int64_t> tokens, std::span<const int64_t> counts,
                                   const SkipGramOptions& options) {
  auto fail = [](const std::string& what) { throw Error(ErrorKind::kInvalidArgument, "skipgram_examples: " + what); };
  if (options.window < 1) fail("window must be >= 1, got " + std::to_string(options.window));
  if (options.negatives < 0) fail("negatives must be >= 0, got " + std::to_string(options.negatives));
  if (!std::isfinite(options.unigram_power) || options.unigram_power < 0) {
    fail("unigram_power must be finite and >= 0, got " + std::to_string(options.unigram_power));
  }
  const int64_t vocabulary = std::ssize(counts);
  std::vector<double> weights(counts.size());
  bool any = false;
  for (size_t v = 0; v < counts.size(); ++v) {
    if (counts[v] < 0) fail("count of word " + std::to_string(v) + " is " + std::to_string(counts[v]) + "; counts must be >= 0");
    // A word never seen is never a negative, whatever the power (0^0 would be 1).
    weights[v] = counts[v] > 0 ? std::pow(static_cast<double>(counts[v]), options.unigram_power) : 0;
    any = any || counts[v] > 0;
  }
  if (!any) fail("the " + std::to_string(vocabulary) + " word counts have no positive entry (negatives need a distribution)");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocabulary) {
      fail("token " + std::to_string(i) + " is word " + std::to_string(tokens[i]) + ", outside the vocabulary [0, " +
           std::to_string(vocabulary) + ")");
    }
  }

  // Token i's reduced window, keyed by (seed, i) so both passes agree.
  const int64_t n = std::ssize(tokens);
  auto reduced_window = [&](int64_t i) {
    return 1 + static_cast<int64_t>(splitmix64_keyed(options.seed, kWindowDomain, static_cast<uint64_t>(i)) %
                                    static_cast<uint64_t>(options.window));
  };
  int64_t examples = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = reduced_window(i);
    examples += std::min(i + b, n - 1) - std::max<int64_t>(i - b, 0);  // the window's positions other than i
  }

  const int64_t width = 1 + options.negatives;
  SkipGramExamples out{Tensor::uninitialized(DType::kInt64, {examples}), Tensor::uninitialized(DType::kInt64, {examples, width}),
                       Tensor(DType::kFloat32, {examples, width})};
  if (examples == 0) return out;
  const AliasTable negatives(weights);
  int64_t* centres = out.centres.data<int64_t>();
  int64_t* targets = out.targets.data<int64_t>();
  float* labels = out.labels.data<float>();  // zero-filled: only the true context's label is set
  uint64_t state = splitmix64_keyed(options.seed, kNegativeDomain, 0);
  int64_t e = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = reduced_window(i);
    for (int64_t j = std::max<int64_t>(i - b, 0); j <= std::min(i + b, n - 1); ++j) {
      if (j == i) continue;
      centres[e] = tokens[static_cast<size_t>(i)];
      int64_t* row = targets + e * width;
      row[0] = tokens[static_cast<size_t>(j)];
      for (int64_t k = 1; k < width; ++k) row[k] = negatives.draw(state);
      labels[e * width] = 1;
      ++e;
    }
  }
  return out;
}

}  // namespace weir
