// Trains a zoo classifier end to end: builds the training-step graph
// (forward, autodiff, optimizer), compiles it, runs the training loop over a
// labelled set, and evaluates the trained weights in the inference graph.
//
//   weir::FashionMnist data = weir::load_fashion_mnist();
//   weir::models::ClassifierTraining options;
//   options.model = "lenet";
//   auto result = weir::models::train_classifier(options, data.train_images, data.train_labels,
//                                                &data.test_images, &data.test_labels);
//   result.test_accuracy;                          // 0.88…
//   weir::save_model(*result.inference_graph, "lenet.weir");
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "runtime/in_process_ranks.h"

namespace weir::models {

struct ClassifierTraining {
  std::string model = "lenet";
  ZooOptions zoo{};
  int64_t batch = 64;
  int64_t epochs = 1;
  int64_t steps = 0;  // > 0: this many steps instead of epochs
  OptimizerConfig optimizer{};
  Strategy strategy{};      // AMP, recompute, data parallelism (`batch` is the whole step's)
  double lr = 1e-3;
  uint64_t data_seed = 1;   // the loader's shuffling
  int inter_op_threads = 1;
  std::ostream* log = &std::cerr;
  std::filesystem::path checkpoint{};  // saved at the end (and every checkpoint_every steps)
  int64_t checkpoint_every = 0;
  Profiler* profiler = nullptr;        // records every step's node runs when set (runtime/profiler.h)
  std::filesystem::path resume{};      // a checkpoint to start from
  // This process as one rank of a world of processes (distributed/): the
  // step is data parallel over the world (strategy.data_parallel.ranks is
  // taken from it), this process feeds its shard of every batch, and only
  // rank 0 writes checkpoints and evaluates the test set. Unset: the ranks
  // of strategy.data_parallel are threads of this process.
  std::shared_ptr<World> world{};
  // Where the step runs: the world's device when there is a world (its
  // type must match), else this device (a GPU trains one rank only).
  Device device = Device::cpu();
  // Each rank's world (`world`, or each in-process rank's) passes through
  // this before its session gets it: graph-runner train meters and slows
  // the links with it (distributed/metered_world.h).
  std::function<std::shared_ptr<World>(std::shared_ptr<World>)> wrap_world{};
  // Called on this thread before the first and after every training step
  // (TrainerOptions::before_steps, after_step).
  std::function<void()> before_steps{};
  std::function<void(int64_t step, double loss)> after_step{};
};

struct ClassifierTrainingResult {
  int64_t steps = 0;           // steps run by this call
  int64_t total_steps = 0;     // the step count after it (includes resumed steps)
  double ms_per_step = 0;
  int64_t step_flops = 0;      // one rank's step, estimated (passes/analysis/flop_estimate.h): forward, backward, update
  double last_loss = 0;
  std::vector<double> losses;  // every step's loss (this call's steps)
  double test_accuracy = -1;   // -1 without a test set (and on ranks other than 0 of a world)
  int64_t peak_memory_bytes = 0;  // the allocators' peaks during training, summed over devices (this process's)
  int64_t head_state_bytes = 0;   // a margin head's centres and their optimizer state, on rank 0 (its own shard)
  TrainingGraph training{};       // what minimize() made of the step (AMP, recompute figures)
  std::unique_ptr<Graph> inference_graph{};  // symbolic batch, trained weights baked in
  // Data parallel: the ranks that trained, each with its own copy of the
  // state (to compare them); nullptr with one rank.
  std::unique_ptr<InProcessRanks> ranks{};
};

// A margin head's centres (ClassifierGraph::class_centres) written into
// `session`'s state as rank `rank`'s rows (nn::fill_class_centres); every
// session of such a graph needs it before its first step.
void initialize_class_centres(Session& session, const ClassCentres& centres, int rank);

ClassifierTrainingResult train_classifier(const ClassifierTraining& options, const Tensor& train_examples,
                                          const Tensor& train_labels, const Tensor* test_examples = nullptr,
                                          const Tensor* test_labels = nullptr);

}  // namespace weir::models
