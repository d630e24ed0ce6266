// `graph-runner train --model ctr|word2vec`: the sparse-feature models,
// trained locally or as one worker of a parameter-server job (--ps MODE,
// under graph-runner launch --servers S --workers W, which passes the
// servers in WEIR_SERVER_ENDPOINTS).
#pragma once

#include <cstdint>
#include <string>

namespace weir::tools {

struct SparseModelArgs {
  std::string model;
  std::string data = "synthetic";  // ctr: synthetic; word2vec: synthetic or a text file
  int64_t epochs = 1;
  int64_t steps = 0;
  int64_t batch = 64;
  std::string optimizer = "adam";
  double lr = 1e-3;
  uint64_t seed = 42;
  int threads = 1;
  int64_t synthetic_examples = 0;  // 0: the model's default
  std::string ps;                  // "", sync, async, half-async, geo
  int geo_k = 100;
  int trainer_threads = 1;
  int reader_threads = 2;
  int max_merge = 20;              // the async communicator's max_merge_var_num (1: no merging)
  int64_t ids_per_slot = 125000;   // ctr, synthetic
  int64_t vocabulary = 10000;      // word2vec, synthetic
  double timeout = 60;             // seconds any call to the servers may wait
  bool print_losses = false;
  std::string checkpoint;          // --ps: the directory the servers save the tables in (DIR/step-B, DIR/latest)
  int64_t checkpoint_every = 0;    // --ps: also every N steps
  std::string resume;              // --ps: such a directory (its latest) or a step directory, loaded before training
  int shrink_after_passes = 0;     // --ps: drop rows unseen for this many epochs, at the end of each
  int64_t admit_after = 1;         // --ps: ids get rows at their N-th lookup
};

bool is_sparse_model(const std::string& model);
void train_sparse_model_command(const SparseModelArgs& args);

}  // namespace weir::tools
