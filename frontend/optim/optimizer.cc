#include "frontend/optim/optimizer.h"

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"
#include "passes/training/training_pipeline.h"
#include "runtime/memory_estimate.h"

namespace weir {

TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config, const Strategy& strategy) {
  return minimize(graph, loss, config, strategy, default_op_registry());
}

TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const OpRegistry& registry) {
  return minimize(graph, loss, config, Strategy{}, registry);
}

TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const Strategy& strategy, const OpRegistry& registry) {
  if (graph.find_value(loss) == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "minimize: the loss '" + loss + "' is not a value of graph '" +
                                                 graph.name() + "'");
  }
  for (const char* reserved : {"lr", "step", "loss_scale"}) {
    if (graph.find_value(reserved) != nullptr) {
      throw Error(ErrorKind::kInvalidArgument, std::string("minimize: graph '") + graph.name() +
                                                   "' already has a value named '" + reserved +
                                                   "', which the training step feeds");
    }
  }
  PassContext context(registry);
  TrainingStepState& step = context.options<TrainingStepState>();
  step.graph.loss = loss;
  // Recompute chooses by the runtime's own estimate of the step's memory.
  auto estimate = [&registry](Graph& g) { return estimate_memory(g, registry).total(); };
  training_pipeline(strategy, config, estimate)->run(graph, context);
  return step.graph;
}

}  // namespace weir
