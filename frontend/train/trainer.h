// The training loop: runs a training-step graph (built with minimize())
// over a data loader, feeding the batch, the learning rate of the schedule
// and the step number, with a progress display, periodic checkpoints and
// exact resumption.
//
//   weir::Session session(weir::compile(*train_graph));
//   weir::DataLoader loader(dataset, {.batch_size = 64, .seed = 1});
//   weir::Trainer trainer(session, step_info, loader, {.feeds = {"x", "labels"}});
//   trainer.resume("ckpt.npz");                  // optional
//   weir::TrainStats stats = trainer.run_epochs(1);
//   trainer.save("ckpt.npz");
//
// The batch order depends only on the loader's seed and the step, and the
// session's RNG state is checkpointed, so stopping after N steps and
// resuming gives the same parameters as running straight through.
//
// Data parallel in one process: given the InProcessRanks of a data-parallel
// step (Strategy::data_parallel), each step's batch is split by rows, rank r
// getting rows [r*b, (r+1)*b), and the ranks run at once; the loss reported
// is the program's, averaged over the ranks, so it is the whole batch's.
// Checkpoints hold rank 0's state (every rank's is the same) and resume
// every rank from it.
//
// Data parallel across processes: given the Session of this process's rank
// (SessionOptions::world) and a loader sharded for it (DataLoaderOptions
// shards = world size, shard = rank), each process feeds its own rows and
// the program's AllReduces meet the other ranks'. Every rank reports the
// world's loss; only rank 0 writes checkpoints, and every rank resumes from
// the same file (a file system all hosts see), whatever the world size was
// when it was written.
//
// Row-sharded state (a model-parallel head's class centres and their
// optimizer state, TrainerOptions::row_shards) differs from rank to rank:
// save() gathers it whole on rank 0, so every rank of a world of processes
// takes part in save(), and resume() gives each rank its rows. Such a
// checkpoint holds what a one-rank run's does and resumes on any world size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "frontend/data/data_loader.h"
#include "frontend/optim/lr_schedule.h"
#include "frontend/optim/optimizer.h"
#include "frontend/train/checkpoint.h"
#include "runtime/in_process_ranks.h"
#include "runtime/session.h"

namespace weir {

struct TrainerOptions {
  std::vector<std::string> feeds{};  // the graph input each dataset field feeds, in field order
  LrSchedule lr = LrSchedule::constant(1e-3);
  std::ostream* log = &std::cerr;  // progress and messages; nullptr: quiet
  int progress_terminal = -1;      // -1: redraw in place when stderr is a terminal
  std::filesystem::path checkpoint{};  // when set: saved every checkpoint_every steps and at the end of each run
  int64_t checkpoint_every = 0;
  // When set, every step's node runs are recorded (on every rank of an
  // in-process world) for a Chrome / Perfetto trace (runtime/profiler.h).
  Profiler* profiler = nullptr;
  // Called after every step with its number (from 1, counting resumed
  // steps) and its loss: per-step figures such as the bytes a metered world
  // (distributed/metered_world.h) sent in the step.
  std::function<void(int64_t step, double loss)> after_step{};
  std::function<void()> before_steps{};  // at the start of every run_steps (a baseline for after_step)
  // A parameter-server worker (models/train_sparse_model.h) feeds its
  // loader's shard of every batch with no world: the workers meet on the
  // servers, not in collectives. Off: the shard must be the world's rank.
  bool parameter_server_worker = false;
  // The batch (counted over epochs) that step 1 takes. A parameter-server
  // job resumed from its servers' saved tables continues the data where the
  // saved job stopped, while its step numbers, which are the sync rounds of
  // the fresh servers, start again at 1.
  int64_t first_batch = 0;
  // Persistent values held in row shards over the ranks (see above): rank
  // r's shard of each, for r in [0, ranks). Unset: every rank's state is
  // the same.
  std::function<RowShards(int rank)> row_shards{};
};

struct TrainStats {
  int64_t steps = 0;       // steps this call ran
  double seconds = 0;
  double ms_per_step = 0;
  double last_loss = 0;
  double mean_loss = 0;    // over this call's steps
  std::vector<double> losses;  // every step's loss, in order, this call's steps
};

class Trainer {
 public:
  Trainer(Session& session, TrainingGraph graph, DataLoader& loader, TrainerOptions options);
  Trainer(InProcessRanks& ranks, TrainingGraph graph, DataLoader& loader, TrainerOptions options);

  int64_t step() const { return step_; }  // steps completed
  int64_t epoch() const;                  // the epoch the next step belongs to
  TrainStats run_steps(int64_t steps);
  TrainStats run_epochs(int64_t epochs);  // up to the end of the epoch `epochs` later

  // Writes a checkpoint on rank 0 (temp file, then rename); other ranks of a
  // world of processes write nothing (with row shards, they send theirs).
  void save(const std::filesystem::path& path) const;
  void resume(const std::filesystem::path& path);

 private:
  Trainer(Session& session, InProcessRanks* ranks, TrainingGraph graph, DataLoader& loader, TrainerOptions options);
  // One step on every rank; returns rank 0's outputs.
  std::vector<Tensor> run_step(const std::map<std::string, Tensor>& feeds);
  // The row-sharded values whole, on rank 0 (other ranks of a world of
  // processes send their shards and get nothing).
  std::map<std::string, Tensor> gather_row_shards() const;
  int ranks() const;  // of the world the trainer's sessions are ranks of (1: none)
  int rank() const;   // this process's (0 for an in-process world)

  Session& session_;        // rank 0's with InProcessRanks
  InProcessRanks* ranks_ = nullptr;
  TrainingGraph graph_;
  DataLoader& loader_;
  TrainerOptions options_;
  int64_t step_ = 0;
  int64_t loader_step_ = -1;  // the step the loader's next batch belongs to; -1: not started
};

// Copies every persistent value `to` has from `from` (by name): e.g. trained
// weights into an inference session. Returns how many were copied.
int copy_state(const Session& from, Session& to);
// Sets each persistent value's initial tensor in `graph` from the session,
// so saving the graph saves the trained weights.
void bake_state(const Session& from, Graph& graph);

}  // namespace weir
