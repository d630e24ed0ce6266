// The zoo's sparse-feature models, trained on parameter servers (or
// locally, the reference): each a graph built at a batch size, with its
// inputs, its loss and, for evaluation, its score.
//
//   weir::models::SparseModelGraph ctr = weir::models::build_ctr(256, {.on_parameter_servers = true});
//   ctr.inputs;   // {"ids", "dense", "label"}
//   ctr.loss;     // "loss"; ctr.score: "probability" (the click probability)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"

namespace weir::models {

struct SparseModelGraph {
  std::unique_ptr<Graph> graph;
  std::vector<std::string> inputs;  // in the order of the dataset's fields
  std::string loss = "loss";
  std::string score;                // what evaluation reads (ctr: "probability"; word2vec: the loss)
};

// Wide & deep (Cheng et al. 2016) on a click log: `slots` categorical ids
// per example (int64 [batch, slots], any 64-bit id on parameter servers,
// [0, vocabulary) locally) and `dense_features` floats. Deep: each id's
// `embedding`-wide row (table "ctr/embedding"), concatenated with the dense
// features, through ReLU layers of `hidden` to one logit. Wide: each id's
// own weight (table "ctr/wide", 1 wide) summed, plus a linear map of the
// dense features. Loss: mean sigmoid cross-entropy against label [batch, 1].
struct CtrConfig {
  int slots = 8;
  int dense_features = 4;
  int64_t vocabulary = 1000000;  // the local form's table rows
  int64_t embedding = 8;
  std::vector<int64_t> hidden = {64, 32};
  int64_t admit_after = 1;       // on parameter servers: an id gets rows at its N-th lookup (zeros before)
  bool on_parameter_servers = false;
  uint64_t seed = 42;            // dense layers' and rows' initial values
};
SparseModelGraph build_ctr(int64_t batch, const CtrConfig& config);

// Skip-gram with negative sampling (Mikolov et al. 2013): a centre word's
// input row (table "word2vec/input", uniform ±0.5/dim) against 1 + k target
// words' output rows (table "word2vec/output", zeros): the true context word
// and k negatives. Inputs: centres int64 [batch], targets int64 [batch, 1+k],
// labels f32 [batch, 1+k] (1, 0, ..., 0). Loss: the sigmoid cross-entropy
// summed over the targets, averaged over the batch.
struct Word2vecConfig {
  int64_t vocabulary = 10000;
  int64_t dim = 64;
  int negatives = 5;
  int64_t admit_after = 1;       // on parameter servers: a word gets rows at its N-th lookup
  bool on_parameter_servers = false;
  uint64_t seed = 42;
};
SparseModelGraph build_word2vec(int64_t batch, const Word2vecConfig& config);

}  // namespace weir::models
