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
  // The rows a step pulls from parameter servers' sparse tables are trained
  // too: their gradients are pushed back (parameter_server_updates.h).
  std::vector<Value*> lookups;
  for (Node* node : graph.nodes()) {
    if (node->op_type() == "PsPullSparse" && node->domain().empty()) lookups.push_back(node->output(0));
  }
  if (params.empty() && lookups.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "differentiate: graph '" + graph.name() + "' has no parameters");
  }
  std::vector<Value*> wrt = params;
  wrt.insert(wrt.end(), lookups.begin(), lookups.end());
  std::vector<Value*> grads = append_backward(graph, differentiated, wrt, context.registry());
  for (size_t i = 0; i < lookups.size(); ++i) {
    Value* grad = grads[params.size() + i];
    if (grad == nullptr) continue;  // a lookup the loss does not read trains nothing
    step.sparse_lookups.push_back(lookups[i]->producer()->name());
    step.sparse_gradients.push_back(grad->name());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (grads[i] == nullptr) {
      step.graph.frozen.push_back(params[i]->name());
      continue;
    }
    step.graph.parameters.push_back(params[i]->name());
    step.raw_gradients.push_back(grads[i]->name());
  }
  if (step.graph.parameters.empty() && step.sparse_lookups.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "differentiate: the loss '" + loss + "' depends on no parameter");
  }
  step.gradients = step.raw_gradients;
  return true;
}

}  // namespace weir
