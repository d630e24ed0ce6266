// Trains a sparse-feature model (ctr, word2vec: models/sparse_models.h)
// end to end: locally, or as one worker of a parameter-server job.
//
//   weir::models::SparseModelTraining options;
//   options.model = "ctr";
//   options.strategy.parameter_server.mode = weir::PsMode::kSync;
//   options.client = weir::ps::connect_parameter_servers({.endpoints = ..., .worker = w});
//   options.worker = w;  options.workers = 2;
//   auto result = weir::models::train_sparse_model(options, train_fields, &test_fields);
//   result.test_auc;   // ctr, on worker 0
//
// On parameter servers: the step is one worker's program on its share of
// every batch (rows [w*b/W, (w+1)*b/W) of the batch a single process would
// take: the same seed gives the same batches), the worker creates the
// step's tables (each dense parameter's initial value offered, the first
// worker's wins) and trains through `client`, which decides the mode's
// communication (the gRPC client directly for sync, an asynchronous
// communicator, a Geo-SGD client). Locally (mode off): the same model with
// its tables as [vocabulary, width] parameters, on the whole batch: the
// reference a sync run must equal, step by step.
//
// Trainer threads (Hogwild, Niu et al. 2011): `trainer_threads` sessions of
// the step share the worker's client and take batches from the reader
// threads' queues in whatever order they come; no locks between them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/parameter_client.h"
#include "core/tensor.h"
#include "frontend/optim/optimizer.h"
#include "models/sparse_models.h"

namespace weir::models {

struct SparseModelTraining {
  std::string model = "ctr";  // "ctr" or "word2vec"
  CtrConfig ctr{};            // on_parameter_servers is set from the strategy
  Word2vecConfig word2vec{};
  int64_t batch = 256;        // the whole step's batch, over all workers
  int64_t epochs = 1;
  int64_t steps = 0;          // > 0: this many steps (this worker's) instead of epochs
  OptimizerConfig optimizer{.kind = OptimizerKind::kAdagrad};
  double lr = 0.05;
  Strategy strategy{};        // parameter_server.mode; workers is taken from `workers`
  std::shared_ptr<ParameterClient> client{};
  // The client beneath `client` that sends each call before returning (the
  // gRPC client under a communicator or a Geo-SGD client): the workers'
  // barriers go through it. Null: `client` itself.
  std::shared_ptr<ParameterClient> servers{};
  // On parameter servers. save_to: after training (and every `save_every`
  // steps) the workers meet, worker 0 has the servers write every table
  // (each shard's file atomically) and every worker writes how many batches
  // it trained (worker-W.state), all in save_to/step-B, B the batches
  // trained. Then worker 0 points save_to/latest at it (atomically) and
  // removes the step directories but the newest two, so a checkpoint is
  // whole or not there. A save in the middle of training has the workers
  // meet once more after it, so no push lands while the servers write.
  // resume_from: the checkpoint save_to/latest names, or a step directory
  // itself; before training worker 0 has the servers read its tables, the
  // workers meet, and each continues the data where it stopped; the step
  // numbers (sync rounds) start again at 1.
  std::filesystem::path save_to{};
  int64_t save_every = 0;  // steps (Hogwild threads stop together for each save)
  std::filesystem::path resume_from{};
  // > 0: every epoch is a pass; at its end the workers meet and worker 0
  // has the servers drop the sparse rows no lookup touched in this many
  // passes (Paddle's shrink).
  int shrink_after_passes = 0;
  int worker = 0;
  int workers = 1;
  int trainer_threads = 1;
  int reader_threads = 2;     // the data loader's, each filling its own queue
  uint64_t data_seed = 1;
  int inter_op_threads = 1;
  int64_t eval_batch = 1024;
  std::ostream* log = &std::cerr;
};

struct SparseModelTrainingResult {
  int64_t steps = 0;            // this worker's steps, over all its trainer threads
  std::vector<double> losses;   // every step's loss (one trainer thread: in step order)
  double last_loss = 0;
  double seconds = 0;
  double examples_per_second = 0;  // this worker's examples
  double test_auc = -1;         // ctr with a test set
  double test_loss = -1;        // mean loss over the test set
  int64_t test_examples = 0;
  int64_t bytes_pushed = 0;     // the client's, during training
  int64_t first_batch = 0;      // the batches a resumed job had trained already
  int64_t rows_dropped = 0;     // by shrinking at the ends of passes (worker 0's count)
  std::vector<std::filesystem::path> saved;  // the checkpoints written, in order
  std::filesystem::path resumed_from;        // the step directory resume_from named
  TrainingGraph training{};
};

// `train` (and `test`): the model's input fields in SparseModelGraph::inputs
// order, examples along axis 0. Worker 0 evaluates `test` (when given) with
// the trained parameters: the servers', once every worker's pushes have
// reached them (the workers meet first), except in async mode, where it
// evaluates what the servers hold when it is done, so that a worker that
// died does not stop it. Every worker is given the same `test`.
SparseModelTrainingResult train_sparse_model(const SparseModelTraining& options, const std::vector<Tensor>& train,
                                             const std::vector<Tensor>* test = nullptr);

// The model's graph at `batch` (on parameter servers or local, as `options` says).
SparseModelGraph build_sparse_model(const SparseModelTraining& options, int64_t batch);

}  // namespace weir::models
