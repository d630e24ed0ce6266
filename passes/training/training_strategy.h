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
// (frontend/strategy/strategy.h parses them), and --strategy FILE, a JSON
// file with Fleet's field names (frontend/strategy/strategy_file.h).
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
  // With one rank: average the gradients through AllReduce all the same. A
  // launched world of one process (one GPU in an NCCL world) then runs the
  // collective path that many ranks run, instead of a program without it.
  bool communicate_alone = false;
  // Parameters each rank holds its own part of (model-parallel shards, the
  // sharded classifier of frontend/nn/margin_head.h): their gradients are
  // not averaged but divided by `ranks` (passes/collectives/data_parallel.h),
  // and DGC and LocalSGD leave them alone.
  std::set<std::string> distributed_parameters{};
};

// How a data-parallel step communicates its gradients (passes/collectives/:
// gradient_buckets.h, allreduce_topology.h). Field names follow Fleet's
// DistributedStrategy where one exists; the defaults are Fleet's.
struct GradientCommunicationStrategy {
  // Gradients packed into flat buckets, one AllReduce each, in the order the
  // backward pass produces them; off: one AllReduce per gradient.
  bool fuse_all_reduce_ops = true;
  double fuse_grad_size_in_MB = 32;   // MiB per bucket (a gradient larger than this is a bucket alone)
  double first_bucket_MB = 1;         // the first bucket, small so communication starts early
  int comm_streams = 1;               // buckets spread round-robin over this many communication streams
  // Each bucket's AllReduce starts as soon as its own gradients exist, while
  // the backward pass goes on; false: after the whole backward pass (the
  // baseline the overlap is measured against; Weir's).
  bool overlap_communication = true;
  // The dtype the buckets are averaged in: f32, or f16/bf16 (cast before and
  // after; half the bytes). Fleet's fp16_allreduce sets f16.
  DType allreduce_dtype = DType::kFloat32;
  // Hierarchical allreduce: within each node a reduce-scatter, across nodes
  // an allreduce of each shard, within each node an allgather. Ranks per
  // node: hierarchical_allreduce_inter_nranks (Fleet's name). 0 asks for
  // the world's local size (ranks on one machine): graph-runner train fills
  // it in from the launcher; training_pipeline() refuses a 0 it is given.
  bool use_hierarchical_allreduce = false;
  int hierarchical_allreduce_inter_nranks = 0;
  // 2-D allreduce over a rows × cols grid of ranks (rank = row * cols + col):
  // reduce-scatter along rows, allreduce along columns, allgather along
  // rows. 0: off.
  int two_d_allreduce_rows = 0;
};

// Gradient merge (passes/training/gradient_merge.h; Fleet's gradient_merge
// and gradient_merge_configs): k micro-steps' gradients accumulated, then
// communicated and applied once.
struct GradientMergeStrategy {
  bool enabled = false;
  int k_steps = 1;
  bool avg = true;  // the mean of the k micro-steps' gradients (false: the sum)
};

// LocalSGD and adaptive LocalSGD (passes/collectives/local_sgd.h; Fleet's
// localsgd / localsgd_configs and adaptive_localsgd /
// adaptive_localsgd_configs): with data parallelism, each rank steps its own
// parameters and the ranks average them every step up to begin_step, then
// every k_steps (adaptive: an interval from the loss and the learning rate,
// starting at init_k_steps). Fleet's defaults.
struct LocalSgdStrategy {
  bool enabled = false;
  bool adaptive = false;
  int k_steps = 1;
  int init_k_steps = 1;
  int begin_step = 1;
};

// Deep gradient compression (passes/collectives/deep_gradient_compression.h;
// Fleet's dgc / dgc_configs): with data parallelism and Momentum, large f32
// gradients are exchanged as their top (index, value) pairs. Fleet's
// defaults; sparsity is the ramp, one entry per stage.
struct DgcStrategy {
  bool enabled = false;
  int rampup_begin_step = 0;
  int rampup_step = 1;
  std::vector<double> sparsity{0.999};
  double clip_norm = 0;  // Weir: per-rank gradient clipping at clip_norm / sqrt(ranks); 0: off
};

// Parameter-server training (passes/training/parameter_server_updates.h;
// Fleet's a_sync and a_sync_configs): the parameters live on parameter
// servers. Each step pulls the dense parameters and the rows of the sparse
// tables (PsPullSparse lookups) it reads, and pushes their gradients; the
// servers apply the optimizer (SGD, Adagrad or Adam, per row). The graph is
// one worker's program, on its share of the batch.
//   kSync: every step's gradients (the mean over `workers`) are applied on
//          the servers before any worker reads the next step's parameters.
//   kAsync, kHalfAsync, kGeo: the step's ops do not wait for other workers;
//          which client the session gets decides the rest (an asynchronous
//          communicator that merges pushes, the same with a barrier, or
//          Geo-SGD's local training with deltas every k steps:
//          distributed/ps/async_communicator.h, geo_client.h).
enum class PsMode { kOff, kSync, kAsync, kHalfAsync, kGeo };

const char* ps_mode_name(PsMode mode);
// "sync", "async", "half-async", "geo"; throws kInvalidArgument naming them.
PsMode parse_ps_mode(const std::string& name);

struct ParameterServerStrategy {
  PsMode mode = PsMode::kOff;
  int workers = 1;  // kSync: the workers whose pushes make a round
};

struct Strategy {
  AmpStrategy amp{};
  ParameterServerStrategy parameter_server{};
  RecomputeStrategy recompute{};
  DataParallelStrategy data_parallel{};
  GradientCommunicationStrategy communication{};
  GradientMergeStrategy gradient_merge{};
  LocalSgdStrategy localsgd{};
  DgcStrategy dgc{};
};

}  // namespace weir
