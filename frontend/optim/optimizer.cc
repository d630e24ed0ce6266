#include "frontend/optim/optimizer.h"

#include <algorithm>
#include <unordered_set>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"
#include "passes/autodiff/autodiff.h"

namespace weir {

namespace {

const char* op_type_of(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "SGD";
    case OptimizerKind::kMomentum: return "Momentum";
    case OptimizerKind::kAdam: return "Adam";
    case OptimizerKind::kAdamW: return "AdamW";
    case OptimizerKind::kLamb: return "LAMB";
  }
  return "SGD";
}

std::vector<const char*> state_names(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return {};
    case OptimizerKind::kMomentum: return {"velocity"};
    default: return {"m", "v"};
  }
}

// Every node that reads `value`, directly or through views of it.
void collect_readers(const Value* value, const OpRegistry& registry, std::unordered_set<Node*>& readers) {
  for (const Use& use : value->uses()) {
    if (!readers.insert(use.node).second) continue;
    const OpSchema* schema = registry.find(use.node->op_type(), use.node->domain());
    if (schema != nullptr && has_trait(schema->traits(), OpTrait::kViewOfInput) && use.input_index == 0 &&
        use.node->num_outputs() > 0 && use.node->output(0) != nullptr) {
      collect_readers(use.node->output(0), registry, readers);
    }
  }
}

}  // namespace

OptimizerKind parse_optimizer_kind(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "sgd") return OptimizerKind::kSgd;
  if (lower == "momentum") return OptimizerKind::kMomentum;
  if (lower == "adam") return OptimizerKind::kAdam;
  if (lower == "adamw") return OptimizerKind::kAdamW;
  if (lower == "lamb") return OptimizerKind::kLamb;
  throw Error(ErrorKind::kInvalidArgument,
              "unknown optimizer '" + name + "' (choices: sgd, momentum, adam, adamw, lamb)");
}

std::string optimizer_kind_name(OptimizerKind kind) {
  std::string name = op_type_of(kind);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config) {
  return minimize(graph, loss, config, default_op_registry());
}

TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const OpRegistry& registry) {
  TrainingGraph result;
  result.loss = loss;
  Value* loss_value = graph.find_value(loss);
  if (loss_value == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "minimize: the loss '" + loss + "' is not a value of graph '" +
                                                 graph.name() + "'");
  }
  for (const char* reserved : {"lr", "step"}) {
    if (graph.find_value(reserved) != nullptr) {
      throw Error(ErrorKind::kInvalidArgument, std::string("minimize: graph '") + graph.name() +
                                                   "' already has a value named '" + reserved +
                                                   "', which the training step feeds");
    }
  }
  std::vector<Value*> params;
  for (Value* v : graph.persistents()) {
    if (v->role() == PersistentRole::kParameter) params.push_back(v);
  }
  if (params.empty()) throw Error(ErrorKind::kInvalidArgument, "minimize: graph '" + graph.name() + "' has no parameters");
  std::vector<Value*> grads = append_backward(graph, loss_value, params, registry);

  std::vector<Value*> trained, trained_grads;
  for (size_t i = 0; i < params.size(); ++i) {
    if (grads[i] == nullptr) {
      result.frozen.push_back(params[i]->name());
    } else {
      trained.push_back(params[i]);
      trained_grads.push_back(grads[i]);
      result.parameters.push_back(params[i]->name());
    }
  }
  if (trained.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "minimize: the loss '" + loss + "' depends on no parameter");
  }
  if (config.clip_global_norm > 0) {
    std::vector<Value*> clip_inputs = trained_grads;
    Node* clip = graph.add_node("ClipByGlobalNorm", clip_inputs, clip_inputs.size() + 1,
                                {{"max_norm", Attribute(config.clip_global_norm)}}, graph.unique_name("clip_by_global_norm"));
    for (size_t i = 0; i < trained_grads.size(); ++i) trained_grads[i] = clip->output(i);
  }

  Value* lr = graph.add_input("lr", {DType::kFloat32, Shape{}});
  Value* step = nullptr;
  const OptimizerKind kind = config.kind;
  if (kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamW || kind == OptimizerKind::kLamb) {
    step = graph.add_input("step", {DType::kInt64, Shape{}});
    result.step_input = "step";
  }
  std::map<std::string, Attribute> attrs = {{"weight_decay", Attribute(config.weight_decay)}};
  if (kind == OptimizerKind::kMomentum) {
    attrs["momentum"] = Attribute(config.momentum);
    attrs["nesterov"] = Attribute(int64_t{config.nesterov ? 1 : 0});
  }
  if (step != nullptr) {
    attrs["beta1"] = Attribute(config.beta1);
    attrs["beta2"] = Attribute(config.beta2);
    if (config.epsilon > 0) attrs["epsilon"] = Attribute(config.epsilon);
  }

  for (size_t i = 0; i < trained.size(); ++i) {
    Value* param = trained[i];
    std::unordered_set<Node*> readers;
    collect_readers(param, registry, readers);
    std::vector<Value*> inputs = {param, trained_grads[i]};
    for (const char* s : state_names(kind)) {
      std::string name = param->name() + "/" + s;
      Value* state = graph.add_persistent(name, param->type(), PersistentRole::kOptimizerState,
                                          Tensor(param->dtype(), param->shape().sizes()));
      result.optimizer_state.push_back(name);
      inputs.push_back(state);
    }
    inputs.push_back(lr);
    if (step != nullptr) inputs.push_back(step);
    size_t num_outputs = 1 + state_names(kind).size();
    Node* update = graph.add_node(op_type_of(kind), inputs, num_outputs, attrs,
                                  graph.unique_name(param->name() + "/" + optimizer_kind_name(kind)));
    if (auto* producer = trained_grads[i]->producer(); producer != nullptr && producer->device()) {
      update->set_device(*producer->device());
    }
    for (Node* reader : readers) update->add_control_input(reader);
  }
  if (graph.outputs().empty() || graph.outputs().front() != loss_value) {
    std::vector<Value*> outputs = graph.outputs();
    graph.clear_outputs();
    graph.add_output(loss_value);
    for (Value* out : outputs) {
      if (out != loss_value) graph.add_output(out);
    }
  }
  infer_graph_types(graph, registry);
  return result;
}

}  // namespace weir
