// ParameterServerUpdates — the update half of a training step whose
// parameters live on parameter servers (Strategy::parameter_server), in
// place of OptimizerUpdates: the servers apply the optimizer, the step
// moves parameters and gradients.
//
//   every trained dense parameter p:  PsPullDense(p) before any reader of p (the servers' value,
//                                     written into p in place), PsPushDense(dp, lr) once dp exists
//   every sparse lookup (PsPullSparse of ids):  PsPushSparse(ids, d rows, lr)
//
// In sync mode each of these ops also reads the round, step - 1 (the "step"
// input, 1 on the first step): a push belongs to its step's round, and a
// pull waits until the servers applied every earlier step's gradients of
// all workers. The ops run on the communication stream ("comm"), like
// collectives, so pushes go out while the backward pass goes on.
//
// The tables the step uses are reported in TrainingGraph::parameter_tables:
// a dense table per parameter (named after it, its element count wide) and
// a sparse table per PsPullSparse table (rows as its init attributes say),
// each with the optimizer's rule. The worker creates them on the servers
// before the first step and offers each dense parameter's initial value.
//
//   weir::ParameterServerUpdates({.mode = weir::PsMode::kSync, .workers = 2},
//                                {.kind = weir::OptimizerKind::kAdagrad}).run(graph, ctx);  // after differentiate
#pragma once

#include "core/parameter_client.h"
#include "passes/pass.h"
#include "passes/training/optimizer_config.h"
#include "passes/training/training_strategy.h"

namespace weir {

// The table rule that applies `optimizer` on the servers; throws
// kUnsupported for an optimizer the servers do not run (momentum, AdamW,
// LAMB) and for weight decay.
TableRule table_rule_of(const OptimizerConfig& optimizer);

class ParameterServerUpdates final : public Pass {
 public:
  ParameterServerUpdates(ParameterServerStrategy strategy, OptimizerConfig optimizer)
      : strategy_(strategy), optimizer_(optimizer) {}
  std::string name() const override { return "parameter_server_updates"; }
  bool run(Graph& graph, PassContext& context) override;

 private:
  ParameterServerStrategy strategy_;
  OptimizerConfig optimizer_;
};

}  // namespace weir
