// Optimizers as graph rewrites: minimize() runs the training pipeline's
// passes, which differentiate the loss and append one update node per
// parameter (SGD, Momentum, Adam, AdamW or LAMB ops, which write the
// parameter and its state in place), so a whole training step is one static
// graph.
//
//   weir::OptimizerConfig adam{.kind = weir::OptimizerKind::kAdam};
//   weir::TrainingGraph step = weir::minimize(graph, "loss", adam);
//   // feeds per run: the model's inputs, step.lr_input (f32 scalar) and,
//   // for Adam/AdamW/LAMB, step.step_input (int64 scalar, 1 for the first update)
//
// Optimizer state (velocity, moments) are persistent values with the
// optimizer-state role named "<parameter>/velocity", "/m", "/v". Every other
// reader of a parameter runs before its update (control edges), so the
// forward and backward passes see the weights of this step.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/op_schema.h"
#include "passes/training/optimizer_config.h"
#include "passes/training/training_step.h"
#include "passes/training/training_strategy.h"

namespace weir {

// Builds the training step: checks the graph (the loss exists; "lr",
// "step" and "loss_scale" are free), then runs training_pipeline(strategy,
// config) (passes/training/training_pipeline.h) with the runtime's memory
// estimate for recompute, and returns what its passes reported. The loss
// must be a scalar; it stays (or becomes) the graph's first output.
//
// With a Strategy: AMP casts the forward graph first (passes/precision), so
// autodiff differentiates through the casts and the f32 parameters stay the
// master copies; fp16 also scales the loss, unscales the gradients, skips
// the update when one overflowed and adapts the scale
// (passes/training/loss_scaling.h). Recompute (passes/memory) runs on the
// whole step. The data-parallel rewrite (passes/collectives) makes the
// result every rank's program: its gradients averaged over the world.
TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const Strategy& strategy, const OpRegistry& registry);
TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const Strategy& strategy = {});
TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const OpRegistry& registry);

}  // namespace weir
