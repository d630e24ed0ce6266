#include "passes/training/differentiate.h"

#include "core/error.h"
#include "passes/autodiff/autodiff.h"
#include "passes/training/training_step.h"

namespace weir {

bool Differentiate::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  const std::string& loss = step.graph.loss;
  const std::string& target = step.differentiated.empty() ? loss : step.differentiated;
  Value* differentiated = graph.find_value(target);
  if (differentiated == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "differentiate: '" + target + "' is not a value of graph '" + graph.name() + "'");
  }
  std::vector<Value*> params;
  for (Value* v : graph.persistents()) {
    if (v->role() == PersistentRole::kParameter) params.push_back(v);
  }
  if (params.empty()) throw Error(ErrorKind::kInvalidArgument, "differentiate: graph '" + graph.name() + "' has no parameters");
  std::vector<Value*> grads = append_backward(graph, differentiated, params, context.registry());
  for (size_t i = 0; i < params.size(); ++i) {
    if (grads[i] == nullptr) {
      step.graph.frozen.push_back(params[i]->name());
      continue;
    }
    step.graph.parameters.push_back(params[i]->name());
    step.raw_gradients.push_back(grads[i]->name());
  }
  if (step.graph.parameters.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "differentiate: the loss '" + loss + "' depends on no parameter");
  }
  step.gradients = step.raw_gradients;
  return true;
}

}  // namespace weir
