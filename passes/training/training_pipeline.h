// The training compiler as passes: what turns a forward graph with a scalar
// loss into one training step, in order —
//
//   auto_mixed_precision  (strategy.amp)        forward ops in bf16/f16, f32 master weights
//   scale_loss            (fp16 loss scaling)   differentiate loss * loss_scale
//   differentiate                               gradients of every parameter the loss reaches
//   unscale_gradients     (fp16 loss scaling)   gradients back to scale, overflow flag
//   clip_gradients        (clip_global_norm)    one global-norm clip
//   optimizer_updates                           update nodes, lr/step inputs, optimizer state
//   recompute             (strategy.recompute)  forward values recomputed in the backward pass
//   data_parallel         (ranks > 1)           the step as every rank's program, AllReduce nodes
//   gradient_buckets      (ranks > 1, strategy.communication) AllReduces fused into buckets,
//                                               streams, f16/bf16 communication
//   allreduce_topology    (hierarchical, 2-D)   bucket AllReduces over a grid of subgroups
//   f32_gradient_accumulation (strategy.amp)    gradient sums written in f32, not cast up
//
//   weir::PassContext ctx(registry);
//   ctx.options<weir::TrainingStepState>().graph.loss = "loss";
//   weir::training_pipeline(strategy, {.kind = weir::OptimizerKind::kAdam}, estimate)->run(graph, ctx);
//   const weir::TrainingGraph& step = ctx.options<weir::TrainingStepState>().graph;   // names and figures
//
// Each pass reports what it did into the context's TrainingStepState (AMP's
// node and cast counts, the recompute checkpoints and estimated peaks, the
// AllReduce count), and the pipeline verifies the graph after every pass
// that changed it. minimize() (frontend/optim) is the driver that checks
// the graph first and runs this.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "passes/pass_manager.h"
#include "passes/training/optimizer_config.h"
#include "passes/training/training_strategy.h"

namespace weir {

// `estimate_peak`: the runtime's memory estimate of a graph, which recompute
// chooses by (needed for a memory budget). Throws weir::Error(kInvalidArgument)
// for a strategy that cannot be built: a memory budget without automatic
// recompute, fewer than one rank.
std::unique_ptr<Pipeline> training_pipeline(const Strategy& strategy, const OptimizerConfig& optimizer,
                                            std::function<int64_t(Graph&)> estimate_peak = {});

}  // namespace weir
