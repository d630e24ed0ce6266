#include "passes/training/loss_scaling.h"

#include "core/error.h"
#include "core/type_inference.h"
#include "passes/training/training_step.h"

namespace weir {

bool ScaleLoss::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  const std::string& loss = step.graph.loss;
  Value* loss_value = graph.find_value(loss);
  if (loss_value == nullptr || loss_value->dtype() != DType::kFloat32) {
    throw Error(ErrorKind::kInvalidArgument, "scale_loss: loss scaling needs an f32 loss, '" + loss + "' is " +
                                                 (loss_value != nullptr ? loss_value->type().to_string() : "missing"));
  }
  Value* scale = graph.add_persistent("loss_scale", {DType::kFloat32, Shape{}}, PersistentRole::kOptimizerState,
                                      Tensor::scalar<float>(static_cast<float>(options_.initial_scale)));
  Node* mul = graph.add_node("Mul", {loss_value, scale}, 1, {}, graph.unique_name(loss + "/scaled"));
  infer_node_types(*mul, context.registry());
  step.differentiated = mul->output(0)->name();
  step.graph.loss_scale = scale->name();
  step.graph.optimizer_state.push_back(scale->name());
  return true;
}

bool UnscaleGradients::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  Value* scale = graph.find_value(step.graph.loss_scale);
  if (scale == nullptr) throw Error(ErrorKind::kInvalidArgument, "unscale_gradients: the step has no loss scale (run scale_loss first)");
  std::vector<Value*> inputs = {scale};
  for (const std::string& name : step.gradients) inputs.push_back(graph.find_value(name));
  Node* unscale = graph.add_node("UnscaleGradients", inputs, step.gradients.size() + 1, {},
                                 graph.unique_name("unscale_gradients"));
  infer_node_types(*unscale, context.registry());
  step.found_inf = unscale->output(0)->name();
  for (size_t i = 0; i < step.gradients.size(); ++i) step.gradients[i] = unscale->output(i + 1)->name();
  return true;
}

}  // namespace weir
