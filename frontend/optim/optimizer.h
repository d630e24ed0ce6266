// Optimizers as graph rewrites: minimize() differentiates the loss (the
// autodiff pass) and appends one update node per parameter (SGD, Momentum,
// Adam, AdamW or LAMB ops, which write the parameter and its state in
// place), so a whole training step is one static graph.
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
#include "frontend/strategy/strategy.h"

namespace weir {

enum class OptimizerKind { kSgd, kMomentum, kAdam, kAdamW, kLamb };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  double weight_decay = 0.0;    // L2 for SGD/Momentum/Adam; decoupled for AdamW/LAMB
  double momentum = 0.9;        // Momentum
  bool nesterov = false;        // Momentum
  double beta1 = 0.9, beta2 = 0.999;
  double epsilon = 0.0;         // 0: the op's default (1e-8; LAMB 1e-6)
  double clip_global_norm = 0;  // > 0: gradients scaled to this global L2 norm at most
};

// "sgd", "momentum", "adam", "adamw", "lamb"; throws naming the choices otherwise.
OptimizerKind parse_optimizer_kind(const std::string& name);
std::string optimizer_kind_name(OptimizerKind kind);

struct TrainingGraph {
  std::string loss{};
  std::string lr_input = "lr";
  std::string step_input{};                // empty when the optimizer needs no step
  std::vector<std::string> parameters{};   // updated, in graph order
  std::vector<std::string> frozen{};     // parameters the loss does not depend on (not updated)
  std::vector<std::string> optimizer_state{};
  // With a Strategy: AMP (low-precision nodes, casts inserted), dynamic loss
  // scaling (the persistent scale, empty when off) and recompute (the
  // checkpoints kept, the nodes cloned, the estimated peak bytes before
  // and after).
  int amp_low_precision_nodes = 0;
  int amp_casts = 0;
  int amp_f32_gradient_sums = 0;  // gradient sums written in f32 instead of cast up (F32GradientAccumulation)
  std::string loss_scale{};
  std::vector<std::string> recompute_checkpoints{};
  int recomputed_nodes = 0;
  int64_t peak_bytes_before_recompute = 0;
  int64_t peak_bytes_after_recompute = 0;
  // Data parallel: the ranks the step is each rank's program for (1: not
  // data parallel) and the AllReduce nodes added.
  int ranks = 1;
  int allreduces = 0;
};

// Appends the backward graph and the updates for every parameter. The loss
// must be a scalar; it stays (or becomes) the graph's first output.
//
// With a Strategy (frontend/strategy): AMP casts the forward graph first
// (passes/precision), so autodiff differentiates through the casts and the
// f32 parameters stay the master copies; fp16 also scales the loss, unscales
// the gradients, skips the update when one overflowed and adapts the scale
// (ops/optimizer/loss_scaling.h). Recompute (passes/memory) runs last, on
// the whole step, with the runtime's memory planner as its peak estimate.
// The data-parallel rewrite (passes/collectives) makes the result every
// rank's program: its gradients averaged over the world.
TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const Strategy& strategy, const OpRegistry& registry);
TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const Strategy& strategy = {});
TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const OpRegistry& registry);

}  // namespace weir
