#include "passes/training/training_pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "passes/collectives/allreduce_topology.h"
#include "passes/collectives/data_parallel.h"
#include "passes/collectives/deep_gradient_compression.h"
#include "passes/collectives/gradient_buckets.h"
#include "passes/collectives/local_sgd.h"
#include "passes/memory/recompute.h"
#include "passes/precision/auto_mixed_precision.h"
#include "passes/precision/f32_gradient_accumulation.h"
#include "passes/training/differentiate.h"
#include "passes/training/gradient_clipping.h"
#include "passes/training/gradient_merge.h"
#include "passes/training/loss_scaling.h"
#include "passes/training/optimizer_updates.h"
#include "passes/training/parameter_server_updates.h"
#include "passes/training/training_step.h"

namespace weir {

namespace {

// The pipeline's own steps around passes that live elsewhere: each runs its
// pass with options taken from the step state, and reports the pass's
// figures back into it.

class MixedPrecisionStep final : public Pass {
 public:
  explicit MixedPrecisionStep(AmpOptions options) : pass_(std::move(options)) {}
  std::string name() const override { return pass_.name(); }
  bool run(Graph& graph, PassContext& context) override {
    bool changed = pass_.run(graph, context);
    TrainingGraph& result = context.options<TrainingStepState>().graph;
    result.amp_low_precision_nodes = pass_.low_precision_nodes();
    result.amp_casts = pass_.casts_inserted();
    return changed;
  }

 private:
  AutoMixedPrecision pass_;
};

class RecomputeStep final : public Pass {
 public:
  explicit RecomputeStep(RecomputeOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "recompute"; }
  bool run(Graph& graph, PassContext& context) override {
    TrainingGraph& result = context.options<TrainingStepState>().graph;
    RecomputeOptions options = options_;
    options.loss = result.loss;
    Recompute pass(options);
    bool changed = pass.run(graph, context);
    result.recompute_checkpoints = pass.checkpoints();
    result.recomputed_nodes = pass.recomputed_nodes();
    result.peak_bytes_before_recompute = pass.peak_before();
    result.peak_bytes_after_recompute = pass.peak_after();
    result.recomputed_flops = pass.recomputed_flops();
    result.forward_flops = pass.forward_flops();
    result.recompute_budget_bytes = pass.budget();
    return changed;
  }

 private:
  RecomputeOptions options_;
};

class DataParallelStep final : public Pass {
 public:
  // `dgc`: the gradients deep gradient compression will exchange are left
  // unaveraged (it adds their communication itself).
  DataParallelStep(DataParallelStrategy strategy, bool dgc) : strategy_(std::move(strategy)), dgc_(dgc) {}
  std::string name() const override { return "data_parallel"; }
  bool run(Graph& graph, PassContext& context) override {
    TrainingStepState& step = context.options<TrainingStepState>();
    const std::vector<std::string>& parameters = step.graph.parameters;
    for (const std::string& name : strategy_.distributed_parameters) {
      if (std::find(parameters.begin(), parameters.end(), name) == parameters.end()) {
        throw Error(ErrorKind::kInvalidArgument, "data_parallel: the distributed parameter '" + name +
                                                     "' is not a parameter the loss trains");
      }
    }
    DataParallelOptions options;
    const std::vector<std::string> compressed =
        dgc_ ? dgc_parameters(graph, parameters, strategy_.distributed_parameters) : std::vector<std::string>{};
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (strategy_.distributed_parameters.count(parameters[i]) != 0) {
        options.shard_gradients.push_back(step.raw_gradients[i]);
      } else if (std::find(compressed.begin(), compressed.end(), parameters[i]) != compressed.end()) {
        options.local_gradients.push_back(step.raw_gradients[i]);
      } else {
        options.gradients.push_back(step.raw_gradients[i]);
      }
    }
    options.ranks = strategy_.ranks;
    options.loss = step.graph.loss;
    options.rank_local_state = step.rank_local_state;
    DataParallel pass(options);
    bool changed = pass.run(graph, context);
    step.graph.ranks = strategy_.ranks;
    step.graph.allreduces = pass.result().allreduces;
    step.graph.allreduce_bytes = pass.result().allreduce_bytes;
    return changed;
  }

 private:
  DataParallelStrategy strategy_;
  bool dgc_;
};

class GradientBucketStep final : public Pass {
 public:
  explicit GradientBucketStep(GradientBucketOptions options) : pass_(options) {}
  std::string name() const override { return pass_.name(); }
  bool run(Graph& graph, PassContext& context) override {
    bool changed = pass_.run(graph, context);
    TrainingGraph& result = context.options<TrainingStepState>().graph;
    result.buckets = pass_.result().buckets;
    result.comm_moved_casts = pass_.result().moved_casts;
    result.comm_added_casts = pass_.result().added_casts;
    result.allreduce_bytes = pass_.result().allreduce_bytes;
    result.allreduces = 0;
    for (const Node* node : graph.nodes()) {
      if (node->op_type() == "AllReduce" && node->domain().empty()) ++result.allreduces;
    }
    return changed;
  }

 private:
  GradientBuckets pass_;
};

class AllreduceTopologyStep final : public Pass {
 public:
  explicit AllreduceTopologyStep(AllreduceTopologyOptions options) : options_(options) {}
  std::string name() const override { return "allreduce_topology"; }
  bool run(Graph& graph, PassContext& context) override {
    bool changed = AllreduceTopology(options_).run(graph, context);
    TrainingGraph& result = context.options<TrainingStepState>().graph;
    result.allreduce_rows = options_.rows;
    result.allreduce_cols = options_.cols;
    return changed;
  }

 private:
  AllreduceTopologyOptions options_;
};

// The rows x cols grid a hierarchical or 2-D allreduce runs on (1 x ranks:
// flat), checked against the world.
AllreduceTopologyOptions allreduce_grid(const GradientCommunicationStrategy& comm, int ranks) {
  auto refuse = [](const std::string& why) { return Error(ErrorKind::kInvalidArgument, "training_pipeline: " + why); };
  if (comm.two_d_allreduce_rows < 0) {
    throw refuse("two_d_allreduce_rows must be positive (0: off), got " + std::to_string(comm.two_d_allreduce_rows));
  }
  if (comm.use_hierarchical_allreduce && comm.two_d_allreduce_rows > 0) {
    throw refuse("use_hierarchical_allreduce and two_d_allreduce_rows each choose the allreduce's topology; set one");
  }
  if (comm.use_hierarchical_allreduce) {
    const int per_node = comm.hierarchical_allreduce_inter_nranks;
    if (per_node < 1) {
      throw refuse("use_hierarchical_allreduce needs hierarchical_allreduce_inter_nranks (ranks per node) >= 1, got " +
                   std::to_string(per_node));
    }
    if (ranks % per_node != 0) {
      throw refuse("hierarchical allreduce: " + std::to_string(ranks) + " ranks do not make whole nodes of " +
                   std::to_string(per_node) + " (hierarchical_allreduce_inter_nranks)");
    }
    return {.rows = ranks / per_node, .cols = per_node};
  }
  if (comm.two_d_allreduce_rows > 0) {
    if (ranks % comm.two_d_allreduce_rows != 0) {
      throw refuse("2-D allreduce: " + std::to_string(ranks) + " ranks do not make a grid of " +
                   std::to_string(comm.two_d_allreduce_rows) + " rows (two_d_allreduce_rows)");
    }
    return {.rows = comm.two_d_allreduce_rows, .cols = ranks / comm.two_d_allreduce_rows};
  }
  return {.rows = 1, .cols = ranks};
}

class SkipMergedCommunicationStep final : public Pass {
 public:
  std::string name() const override { return pass_.name(); }
  bool run(Graph& graph, PassContext& context) override {
    bool changed = pass_.run(graph, context);
    context.options<TrainingStepState>().graph.merged_collectives = pass_.collectives();
    return changed;
  }

 private:
  SkipMergedCommunication pass_;
};

class LocalSgdStep final : public Pass {
 public:
  LocalSgdStep(LocalSgdOptions options, int ranks) : pass_(std::move(options)), ranks_(ranks) {}
  std::string name() const override { return pass_.name(); }
  bool run(Graph& graph, PassContext& context) override {
    bool changed = pass_.run(graph, context);
    context.options<TrainingStepState>().graph.ranks = ranks_;
    return changed;
  }

 private:
  LocalSgd pass_;
  int ranks_;
};

// The strategy's switches that exclude each other, named as in a strategy
// file (Fleet's names).
void check_combinations(const Strategy& strategy, const OptimizerConfig& optimizer, bool scaling) {
  auto refuse = [](const std::string& why) { return Error(ErrorKind::kUnsupported, "training_pipeline: " + why); };
  const bool localsgd = strategy.localsgd.enabled;
  const bool merging = strategy.gradient_merge.enabled && strategy.gradient_merge.k_steps > 1;
  const char* localsgd_name = strategy.localsgd.adaptive ? "adaptive_localsgd" : "localsgd";
  if (localsgd && strategy.dgc.enabled) {
    throw refuse(std::string(localsgd_name) + " and dgc each cut the gradient traffic their own way (parameter "
                 "averages every k steps, sparse gradients every step); set one");
  }
  if (strategy.parameter_server.mode != PsMode::kOff) {
    const std::string ps = std::string("parameter-server training (") + ps_mode_name(strategy.parameter_server.mode) + ")";
    if (strategy.data_parallel.ranks > 1) {
      throw refuse(ps + " with data parallelism over collectives is not supported: the workers share parameters "
                   "through the servers; leave data_parallel at 1 rank");
    }
    if (localsgd || strategy.dgc.enabled) throw refuse(ps + " with localsgd or dgc is not supported; set one");
    if (merging) throw refuse(ps + " with gradient_merge is not supported; set one");
    if (scaling) throw refuse(ps + " with dynamic loss scaling (amp with fp16) is not supported; use bf16");
    table_rule_of(optimizer);  // throws for an optimizer the servers do not run
  }
  if (localsgd && merging) throw refuse(std::string(localsgd_name) + " with gradient_merge is not supported; set one");
  if (localsgd && scaling) {
    throw refuse(std::string(localsgd_name) + " with dynamic loss scaling (amp with fp16) is not supported: each rank "
                 "would keep its own scale; use amp_configs.dtype bf16");
  }
  if (strategy.dgc.enabled) {
    if (optimizer.kind != OptimizerKind::kMomentum) {
      throw refuse("dgc needs the Momentum optimizer (its momentum correction replaces Momentum's velocity), got " +
                   optimizer_kind_name(optimizer.kind));
    }
    if (strategy.communication.allreduce_dtype != DType::kFloat32) {
      throw refuse("dgc with fp16_allreduce (allreduce_dtype " + std::string(dtype_name(strategy.communication.allreduce_dtype)) +
                   ") is not supported: DGC sends f32 (index, value) pairs; set one");
    }
    if (merging) throw refuse("dgc with gradient_merge is not supported; set one");
    if (scaling) throw refuse("dgc with dynamic loss scaling (amp with fp16) is not supported; use amp_configs.dtype bf16");
    if (optimizer.clip_global_norm > 0) {
      throw refuse("dgc with a global-norm clip (--clip-global-norm) is not supported: DGC clips each rank's "
                   "gradients itself (dgc_configs.clip_norm)");
    }
  }
}

class F32GradientStep final : public Pass {
 public:
  std::string name() const override { return pass_.name(); }
  bool run(Graph& graph, PassContext& context) override {
    bool changed = pass_.run(graph, context);
    context.options<TrainingStepState>().graph.amp_f32_gradient_sums = pass_.folded_casts();
    return changed;
  }

 private:
  F32GradientAccumulation pass_;
};

}  // namespace

std::unique_ptr<Pipeline> training_pipeline(const Strategy& strategy, const OptimizerConfig& optimizer,
                                            std::function<int64_t(Graph&)> estimate_peak) {
  const AmpStrategy& amp = strategy.amp;
  const bool scaling = amp.enabled && (amp.loss_scaling == AmpStrategy::LossScaling::kOn ||
                                       (amp.loss_scaling == AmpStrategy::LossScaling::kAuto && amp_needs_loss_scaling(amp.dtype)));
  const RecomputeStrategy& recompute = strategy.recompute;
  if (recompute.mode == RecomputeMode::kOff && recompute.memory_budget > 0) {
    throw Error(ErrorKind::kInvalidArgument, "training_pipeline: a memory budget needs recompute (auto)");
  }
  if (strategy.data_parallel.ranks < 1) {
    throw Error(ErrorKind::kInvalidArgument, "training_pipeline: data parallelism needs at least 1 rank, got " +
                                                 std::to_string(strategy.data_parallel.ranks));
  }

  check_combinations(strategy, optimizer, scaling);
  const LocalSgdStrategy& localsgd = strategy.localsgd;
  auto pipeline = std::make_unique<Pipeline>("training_step");
  if (amp.enabled) pipeline->add(std::make_unique<MixedPrecisionStep>(AmpOptions{.low = amp.dtype, .allow = amp.allow, .deny = amp.deny}));
  if (scaling) pipeline->add(std::make_unique<ScaleLoss>(LossScaleOptions{.initial_scale = amp.initial_scale}));
  pipeline->add(std::make_unique<Differentiate>());
  const GradientMergeStrategy& merge = strategy.gradient_merge;
  const bool merging = merge.enabled && merge.k_steps > 1;
  if (merge.enabled && merge.k_steps < 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "training_pipeline: gradient_merge needs k_steps >= 1, got " + std::to_string(merge.k_steps));
  }
  if (merging && scaling) {
    throw Error(ErrorKind::kUnsupported, "training_pipeline: gradient merge with dynamic loss scaling (fp16 AMP) is "
                                         "not supported; use bf16 AMP, or turn loss scaling off");
  }
  if (merging) pipeline->add(std::make_unique<GradientMerge>(GradientMergeOptions{.k_steps = merge.k_steps, .avg = merge.avg}));
  if (scaling) pipeline->add(std::make_unique<UnscaleGradients>());
  if (optimizer.clip_global_norm > 0) pipeline->add(std::make_unique<ClipGradients>(ClipOptions{.max_norm = optimizer.clip_global_norm}));
  if (strategy.parameter_server.mode != PsMode::kOff) {
    pipeline->add(std::make_unique<ParameterServerUpdates>(strategy.parameter_server, optimizer));
  } else {
    pipeline->add(std::make_unique<OptimizerUpdates>(optimizer, amp));
  }
  if (recompute.mode != RecomputeMode::kOff) {
    RecomputeOptions options;
    options.checkpoints = recompute.checkpoints;
    options.automatic = recompute.mode == RecomputeMode::kAuto;
    options.memory_budget = recompute.memory_budget;
    options.estimate_peak = std::move(estimate_peak);
    pipeline->add(std::make_unique<RecomputeStep>(std::move(options)));
  }
  const GradientCommunicationStrategy& comm = strategy.communication;
  if (comm.comm_streams < 1 || comm.comm_streams > 64) {
    throw Error(ErrorKind::kInvalidArgument,
                "training_pipeline: comm_streams must be 1 to 64, got " + std::to_string(comm.comm_streams));
  }
  if (!(comm.fuse_grad_size_in_MB > 0) || !(comm.first_bucket_MB > 0)) {
    throw Error(ErrorKind::kInvalidArgument, "training_pipeline: fuse_grad_size_in_MB and first_bucket_MB must be "
                                             "positive, got " + std::to_string(comm.fuse_grad_size_in_MB) + " and " +
                                                 std::to_string(comm.first_bucket_MB));
  }
  if (comm.allreduce_dtype != DType::kFloat32 && comm.allreduce_dtype != DType::kFloat16 &&
      comm.allreduce_dtype != DType::kBFloat16) {
    throw Error(ErrorKind::kInvalidArgument, "training_pipeline: allreduce_dtype must be f32, f16 or bf16, got " +
                                                 std::string(dtype_name(comm.allreduce_dtype)));
  }
  if (strategy.data_parallel.ranks > 1 || strategy.data_parallel.communicate_alone) {
    if (localsgd.enabled) {
      LocalSgdOptions options{.k_steps = localsgd.k_steps, .begin_step = localsgd.begin_step, .adaptive = localsgd.adaptive,
                              .init_k_steps = localsgd.init_k_steps, .excluded = strategy.data_parallel.distributed_parameters};
      pipeline->add(std::make_unique<LocalSgdStep>(std::move(options), strategy.data_parallel.ranks));
    } else {
      pipeline->add(std::make_unique<DataParallelStep>(strategy.data_parallel, strategy.dgc.enabled));
    }
    if (strategy.dgc.enabled) {
      const DgcStrategy& dgc = strategy.dgc;
      DgcOptions options{.ranks = strategy.data_parallel.ranks, .rampup_begin_step = dgc.rampup_begin_step,
                         .rampup_step = dgc.rampup_step, .sparsity = dgc.sparsity, .clip_norm = dgc.clip_norm,
                         .excluded = strategy.data_parallel.distributed_parameters};
      pipeline->add(std::make_unique<DeepGradientCompression>(std::move(options)));
    }
    const AllreduceTopologyOptions grid = allreduce_grid(comm, strategy.data_parallel.ranks);
    const bool topology = grid.rows > 1 && grid.cols > 1;
    if (comm.fuse_all_reduce_ops || comm.allreduce_dtype != DType::kFloat32 || comm.comm_streams > 1 || topology ||
        !comm.overlap_communication) {
      constexpr double kMiB = 1024.0 * 1024.0;
      GradientBucketOptions buckets;
      buckets.bucket_bytes = comm.fuse_all_reduce_ops ? static_cast<int64_t>(comm.fuse_grad_size_in_MB * kMiB) : 0;
      buckets.first_bucket_bytes = comm.fuse_all_reduce_ops ? static_cast<int64_t>(comm.first_bucket_MB * kMiB) : 0;
      buckets.comm_streams = comm.comm_streams;
      buckets.dtype = comm.allreduce_dtype;
      buckets.pad_to_multiple = topology ? grid.cols : 1;
      buckets.overlap = comm.overlap_communication;
      pipeline->add(std::make_unique<GradientBucketStep>(buckets));
    }
    if (topology) pipeline->add(std::make_unique<AllreduceTopologyStep>(grid));
    if (merging) pipeline->add(std::make_unique<SkipMergedCommunicationStep>());
    if (localsgd.enabled) pipeline->add(std::make_unique<SkipLocalSgdCommunication>());
  }
  // Last, since it removes the gradient Casts the passes above name: their
  // producers write the f32 gradients themselves.
  if (amp.enabled) pipeline->add(std::make_unique<F32GradientStep>());
  return pipeline;
}

}  // namespace weir
