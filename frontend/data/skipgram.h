// word2vec's data: a corpus (synthetic, or any text file) and the training
// examples of skip-gram with negative sampling (Mikolov et al., 2013).
//
//   std::vector<int64_t> tokens = weir::zipf_corpus(10000, 1000000, 1.0, 7);
//   std::vector<int64_t> counts(10000);
//   for (int64_t t : tokens) ++counts[t];
//   weir::SkipGramExamples examples = weir::skipgram_examples(tokens, counts, {.window = 5, .negatives = 5});
//   // examples.centres[i] with examples.targets[i, :] and examples.labels[i, :] = 1, 0, 0, ...
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace weir {

// A seeded synthetic corpus: `tokens` word ids in [0, vocabulary), where
// word id w has frequency exactly proportional to 1/(w+1)^exponent (so id 0
// is the most frequent word, as read_text_corpus numbers them), with local
// structure that skip-gram can learn. The generator:
//   - the vocabulary is dealt into T = clamp(vocabulary / 32, 1, 64) topics:
//     a seeded shuffle of the ids, then topic t takes every T-th word of it,
//     so every topic has words of every frequency;
//   - the corpus is a sequence of sentences of 20 tokens (the last one may be
//     cut short); each sentence picks a topic with probability proportional
//     to the topic's total Zipf weight;
//   - each token is, with probability 0.8, drawn from the sentence's topic
//     (Zipf restricted to the topic's words), otherwise (0.2) from the whole
//     vocabulary (the background of common words every topic shares).
// Choosing topics by their Zipf weight makes each word's overall frequency
// exactly its Zipf probability; words of one topic co-occur within
// sentences, so skip-gram's embeddings of them end up close.
// Deterministic in (vocabulary, tokens, exponent, seed). Throws
// kInvalidArgument for vocabulary < 1, tokens < 0, or an exponent that is
// negative or not finite.
std::vector<int64_t> zipf_corpus(int64_t vocabulary, int64_t tokens, double exponent, uint64_t seed);

struct TextCorpus {
  std::vector<int64_t> tokens;     // the file's kept words, in order, as ids
  std::vector<std::string> words;  // id -> word
  std::vector<int64_t> counts;     // id -> occurrences in the file
};

// Any text file: whitespace-separated words, lower-cased; words seen fewer than min_count times are dropped;
// ids by descending count (ties by first appearance). Missing file / empty vocabulary: clear errors naming the file.
// Whitespace and lower-casing are ASCII (other bytes, UTF-8 included, are kept as they are); dropped words are
// removed from `tokens`, as word2vec does. A min_count of 0 or 1 keeps every word; a negative one is an error.
// Only regular files are read (a FIFO or device is refused, never blocked on): kIo naming the file.
TextCorpus read_text_corpus(const std::filesystem::path& path, int64_t min_count);

struct SkipGramOptions {
  int window = 5;               // the largest distance between a centre and a context word
  int negatives = 5;            // negative targets per example
  double unigram_power = 0.75;  // negatives ~ count^unigram_power
  uint64_t seed = 1;            // the reduced windows and the negatives
};

// Training examples of skip-gram with negative sampling: for each token and each context word within a random
// window (1..window, as word2vec does) one example: centre word, then 1 + negatives target words (the true context
// word first, then `negatives` words drawn from the unigram distribution raised to unigram_power), and labels
// 1, 0, 0, ... ; `counts` are the word counts (vocabulary size = counts.size()).
//
// Examples come in corpus order: token 0's contexts (left to right), then
// token 1's, and so on. Token i's window b_i is uniform in [1, window],
// keyed by (seed, i); the negatives come from one seeded stream through an
// alias table (Walker/Vose: O(1) a draw). The negatives are exactly that
// distribution: one may equal the true context word (word2vec skips such a
// draw; here the example's shape is fixed, and with a real vocabulary it is
// rare). Deterministic in (tokens, counts, options). N is about
// tokens x (window + 1), so memory is about 8 N (2 + negatives) bytes.
// Throws kInvalidArgument for window < 1, negatives < 0, an unigram_power
// that is negative or not finite, a negative count, counts with no positive
// entry, or a token outside [0, counts.size()).
struct SkipGramExamples {
  Tensor centres;  // int64 [N]
  Tensor targets;  // int64 [N, 1+negatives]
  Tensor labels;   // f32 [N, 1+negatives]
};
SkipGramExamples skipgram_examples(std::span<const int64_t> tokens, std::span<const int64_t> counts,
                                   const SkipGramOptions& options);

}  // namespace weir
