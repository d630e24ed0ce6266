#include "passes/training/optimizer_updates.h"

#include <map>
#include <unordered_set>

#include "core/error.h"
#include "core/type_inference.h"
#include "passes/training/training_step.h"

namespace weir {

namespace {

std::map<std::string, Attribute> update_attributes(const OptimizerConfig& config, bool has_step) {
  std::map<std::string, Attribute> attrs = {{"weight_decay", Attribute(config.weight_decay)}};
  if (config.kind == OptimizerKind::kMomentum) {
    attrs["momentum"] = Attribute(config.momentum);
    attrs["nesterov"] = Attribute(int64_t{config.nesterov ? 1 : 0});
  }
  if (config.kind == OptimizerKind::kAdagrad && config.epsilon > 0) attrs["epsilon"] = Attribute(config.epsilon);
  if (has_step) {
    attrs["beta1"] = Attribute(config.beta1);
    attrs["beta2"] = Attribute(config.beta2);
    if (config.epsilon > 0) attrs["epsilon"] = Attribute(config.epsilon);
  }
  return attrs;
}

}  // namespace

bool OptimizerUpdates::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  TrainingGraph& result = step.graph;
  const OpRegistry& registry = context.registry();
  if (!step.sparse_lookups.empty()) {
    const Node* lookup = graph.find_node(step.sparse_lookups.front());
    throw Error(ErrorKind::kUnsupported,
                "optimizer_updates: the loss reads rows of the parameter servers' sparse table '" +
                    (lookup != nullptr ? lookup->attr("table").s() : std::string("?")) + "' (node '" +
                    step.sparse_lookups.front() + "'), which only the servers can update: train it with a "
                    "parameter-server strategy (Strategy::parameter_server; graph-runner train --ps MODE)");
  }
  Value* loss_value = graph.find_value(result.loss);
  if (loss_value == nullptr) throw Error(ErrorKind::kInvalidArgument, "optimizer_updates: no loss '" + result.loss + "'");
  Value* found_inf = step.found_inf.empty() ? nullptr : graph.find_value(step.found_inf);
  // The flag every update skips on: loss scaling's overflow, or gradient
  // merge's steps between updates (gradient_merge.h refuses both at once).
  Value* skip = found_inf != nullptr ? found_inf : step.merge_skip.empty() ? nullptr : graph.find_value(step.merge_skip);

  Value* lr = graph.add_input(result.lr_input, {DType::kFloat32, Shape{}});
  const OptimizerKind kind = config_.kind;
  Value* step_input = nullptr;
  if (kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamW || kind == OptimizerKind::kLamb) {
    step_input = graph.find_value("step");  // gradient merge adds it for every optimizer
    if (step_input == nullptr) step_input = graph.add_input("step", {DType::kInt64, Shape{}});
    result.step_input = "step";
    if (!step.update_step.empty()) step_input = graph.find_value(step.update_step);
  }
  const std::map<std::string, Attribute> attrs = update_attributes(config_, step_input != nullptr);
  for (size_t i = 0; i < result.parameters.size(); ++i) {
    Value* param = graph.find_value(result.parameters[i]);
    Value* gradient = graph.find_value(step.gradients[i]);
    std::unordered_set<Node*> readers;
    collect_readers(param, registry, readers);
    std::vector<Value*> inputs = {param, gradient};
    for (const char* s : optimizer_state_names(kind)) {
      std::string name = param->name() + "/" + s;
      // No initial tensor: a session zero-fills a typed persistent value,
      // so the graph does not hold a zero copy of every parameter per
      // state (2 GB for Adam on a million-class head's shard).
      Value* state = graph.add_persistent(name, param->type(), PersistentRole::kOptimizerState, Tensor());
      result.optimizer_state.push_back(name);
      inputs.push_back(state);
    }
    inputs.push_back(lr);
    if (step_input != nullptr) inputs.push_back(step_input);
    if (skip != nullptr) inputs.push_back(skip);
    size_t num_outputs = 1 + optimizer_state_names(kind).size();
    Node* update = graph.add_node(optimizer_op_type(kind), inputs, num_outputs, attrs,
                                  graph.unique_name(param->name() + "/" + optimizer_kind_name(kind)));
    if (auto* producer = gradient->producer(); producer != nullptr && producer->device()) {
      update->set_device(*producer->device());
    }
    for (Node* reader : readers) update->add_control_input(reader);
  }
  if (found_inf != nullptr) {
    Value* scale = graph.find_value(result.loss_scale);
    std::unordered_set<Node*> readers;
    collect_readers(scale, registry, readers);
    Value* good_steps = graph.add_persistent("loss_scale/good_steps", {DType::kInt64, Shape{}},
                                             PersistentRole::kOptimizerState, Tensor::scalar<int64_t>(0));
    result.optimizer_state.push_back("loss_scale/good_steps");
    Node* update = graph.add_node("UpdateLossScale", {scale, good_steps, found_inf}, 2,
                                  {{"growth_factor", Attribute(amp_.growth_factor)},
                                   {"backoff_factor", Attribute(amp_.backoff_factor)},
                                   {"growth_interval", Attribute(amp_.growth_interval)}},
                                  graph.unique_name("update_loss_scale"));
    for (Node* reader : readers) update->add_control_input(reader);
  }
  make_first_output(graph, loss_value);
  return true;
}

}  // namespace weir
