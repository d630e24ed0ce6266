#include "passes/training/training_pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "passes/collectives/data_parallel.h"
#include "passes/memory/recompute.h"
#include "passes/precision/auto_mixed_precision.h"
#include "passes/precision/f32_gradient_accumulation.h"
#include "passes/training/differentiate.h"
#include "passes/training/gradient_clipping.h"
#include "passes/training/loss_scaling.h"
#include "passes/training/optimizer_updates.h"
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
    return changed;
  }

 private:
  RecomputeOptions options_;
};

class DataParallelStep final : public Pass {
 public:
  explicit DataParallelStep(DataParallelStrategy strategy) : strategy_(std::move(strategy)) {}
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
    for (size_t i = 0; i < parameters.size(); ++i) {
      const bool distributed = strategy_.distributed_parameters.count(parameters[i]) != 0;
      (distributed ? options.local_gradients : options.gradients).push_back(step.raw_gradients[i]);
    }
    options.loss = step.graph.loss;
    DataParallel pass(options);
    bool changed = pass.run(graph, context);
    step.graph.ranks = strategy_.ranks;
    step.graph.allreduces = pass.result().allreduces;
    step.graph.allreduce_bytes = pass.result().allreduce_bytes;
    return changed;
  }

 private:
  DataParallelStrategy strategy_;
};

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

  auto pipeline = std::make_unique<Pipeline>("training_step");
  if (amp.enabled) pipeline->add(std::make_unique<MixedPrecisionStep>(AmpOptions{.low = amp.dtype, .allow = amp.allow, .deny = amp.deny}));
  if (scaling) pipeline->add(std::make_unique<ScaleLoss>(LossScaleOptions{.initial_scale = amp.initial_scale}));
  pipeline->add(std::make_unique<Differentiate>());
  if (scaling) pipeline->add(std::make_unique<UnscaleGradients>());
  if (optimizer.clip_global_norm > 0) pipeline->add(std::make_unique<ClipGradients>(ClipOptions{.max_norm = optimizer.clip_global_norm}));
  pipeline->add(std::make_unique<OptimizerUpdates>(optimizer, amp));
  if (recompute.mode != RecomputeMode::kOff) {
    RecomputeOptions options;
    options.checkpoints = recompute.checkpoints;
    options.automatic = recompute.mode == RecomputeMode::kAuto;
    options.memory_budget = recompute.memory_budget;
    options.estimate_peak = std::move(estimate_peak);
    pipeline->add(std::make_unique<RecomputeStep>(std::move(options)));
  }
  if (strategy.data_parallel.ranks > 1) pipeline->add(std::make_unique<DataParallelStep>(strategy.data_parallel));
  // Last, since it removes the gradient Casts the passes above name: their
  // producers write the f32 gradients themselves.
  if (amp.enabled) pipeline->add(std::make_unique<F32GradientStep>());
  return pipeline;
}

}  // namespace weir
