// Strategy — one object that turns on the training-step rewrites beyond
// plain differentiation: mixed precision, recompute and data parallelism
// (and, as they arrive, the other distributed ones). training_pipeline()
// (passes/training/training_pipeline.h) builds its passes from it.
//
//   weir::Strategy strategy;
//   strategy.amp.enabled = true;                     // bf16 on the CPU; fp16 adds loss scaling
//   strategy.recompute.mode = weir::RecomputeMode::kAuto;
//   strategy.recompute.memory_budget = int64_t{1} << 30;
//   strategy.data_parallel.ranks = 2;                // each rank on half the batch
//   weir::TrainingGraph step = weir::minimize(graph, "loss", {.kind = weir::OptimizerKind::kAdam}, strategy);
//
// The same switches on the command line: graph-runner train --amp bf16|fp16
// --recompute auto|NAME,NAME --memory-budget BYTES --data-parallel N
// (frontend/strategy/strategy.h parses them).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace weir {

struct AmpStrategy {
  bool enabled = false;
  DType dtype = DType::kBFloat16;   // kBFloat16 or kFloat16
  std::set<std::string> allow{};    // op types added to the low-precision list
  std::set<std::string> deny{};     // op types kept in f32
  // Dynamic loss scaling; by default on exactly for fp16 (bf16 has f32's range).
  enum class LossScaling { kAuto, kOn, kOff } loss_scaling = LossScaling::kAuto;
  double initial_scale = 65536.0;
  int64_t growth_interval = 2000;   // clean steps before the scale doubles
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
};

enum class RecomputeMode { kOff, kCheckpoints, kAuto };

struct RecomputeStrategy {
  RecomputeMode mode = RecomputeMode::kOff;
  std::vector<std::string> checkpoints{};  // kCheckpoints: forward values to keep
  int64_t memory_budget = 0;               // bytes (kAuto); 0: the lowest peak
};

// The data-parallel rewrite (passes/collectives/data_parallel.h): the graph
// given to minimize() is one rank's, built at the per-rank batch, and the
// step becomes the program every rank of a world of `ranks` runs, with the
// gradients averaged over the world. Run it with InProcessRanks (ranks as
// threads) or as the processes of a launched job. Recompute, when on, is
// chosen for one rank (its memory budget is per device).
struct DataParallelStrategy {
  int ranks = 1;  // > 1: the step is one rank's of this many
  // Parameters each rank holds its own part of (model-parallel shards):
  // their gradients are not averaged.
  std::set<std::string> distributed_parameters{};
};

struct Strategy {
  AmpStrategy amp{};
  RecomputeStrategy recompute{};
  DataParallelStrategy data_parallel{};
};

}  // namespace weir
