#include "frontend/optim/optimizer.h"

#include <algorithm>
#include <unordered_set>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"
#include "passes/autodiff/autodiff.h"
#include "passes/collectives/data_parallel.h"
#include "passes/memory/recompute.h"
#include "passes/precision/f32_gradient_accumulation.h"
#include "passes/precision/auto_mixed_precision.h"
#include "runtime/memory_estimate.h"

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

TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config, const Strategy& strategy) {
  return minimize(graph, loss, config, strategy, default_op_registry());
}

TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const OpRegistry& registry) {
  return minimize(graph, loss, config, Strategy{}, registry);
}

TrainingGraph minimize(Graph& graph, const std::string& loss, const OptimizerConfig& config,
                       const Strategy& strategy, const OpRegistry& registry) {
  TrainingGraph result;
  result.loss = loss;
  Value* loss_value = graph.find_value(loss);
  if (loss_value == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "minimize: the loss '" + loss + "' is not a value of graph '" +
                                                 graph.name() + "'");
  }
  const AmpStrategy& amp = strategy.amp;
  const bool scaling = amp.enabled && (amp.loss_scaling == AmpStrategy::LossScaling::kOn ||
                                       (amp.loss_scaling == AmpStrategy::LossScaling::kAuto && amp_needs_loss_scaling(amp.dtype)));
  for (const char* reserved : {"lr", "step", "loss_scale"}) {
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
  PassContext context(registry);
  if (amp.enabled) {
    AutoMixedPrecision pass({.low = amp.dtype, .allow = amp.allow, .deny = amp.deny});
    pass.run(graph, context);
    result.amp_low_precision_nodes = pass.low_precision_nodes();
    result.amp_casts = pass.casts_inserted();
  }
  // Dynamic loss scaling: differentiate loss * scale, so gradients too small
  // for f16 are lifted into its range; they are divided back below.
  Value* scale = nullptr;
  Value* differentiated = loss_value;
  if (scaling) {
    if (loss_value->dtype() != DType::kFloat32) {
      throw Error(ErrorKind::kInvalidArgument, "minimize: loss scaling needs an f32 loss, '" + loss + "' is " +
                                                   loss_value->type().to_string());
    }
    scale = graph.add_persistent("loss_scale", {DType::kFloat32, Shape{}}, PersistentRole::kOptimizerState,
                                 Tensor::scalar<float>(static_cast<float>(amp.initial_scale)));
    Node* mul = graph.add_node("Mul", {loss_value, scale}, 1, {}, graph.unique_name(loss + "/scaled"));
    infer_node_types(*mul, registry);
    differentiated = mul->output(0);
    result.loss_scale = "loss_scale";
    result.optimizer_state.push_back("loss_scale");
  }
  std::vector<Value*> grads = append_backward(graph, differentiated, params, registry);

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
  const std::vector<Value*> raw_grads = trained_grads;  // what data parallelism averages
  Value* found_inf = nullptr;
  if (scaling) {
    std::vector<Value*> inputs = {scale};
    inputs.insert(inputs.end(), trained_grads.begin(), trained_grads.end());
    Node* unscale = graph.add_node("UnscaleGradients", inputs, trained_grads.size() + 1, {}, graph.unique_name("unscale_gradients"));
    infer_node_types(*unscale, registry);
    found_inf = unscale->output(0);
    for (size_t i = 0; i < trained_grads.size(); ++i) trained_grads[i] = unscale->output(i + 1);
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
    if (found_inf != nullptr) inputs.push_back(found_inf);
    size_t num_outputs = 1 + state_names(kind).size();
    Node* update = graph.add_node(op_type_of(kind), inputs, num_outputs, attrs,
                                  graph.unique_name(param->name() + "/" + optimizer_kind_name(kind)));
    if (auto* producer = trained_grads[i]->producer(); producer != nullptr && producer->device()) {
      update->set_device(*producer->device());
    }
    for (Node* reader : readers) update->add_control_input(reader);
  }
  if (scaling) {
    std::unordered_set<Node*> readers;
    collect_readers(scale, registry, readers);
    Value* good_steps = graph.add_persistent("loss_scale/good_steps", {DType::kInt64, Shape{}}, PersistentRole::kOptimizerState,
                                             Tensor::scalar<int64_t>(0));
    result.optimizer_state.push_back("loss_scale/good_steps");
    Node* update = graph.add_node("UpdateLossScale", {scale, good_steps, found_inf}, 2,
                                  {{"growth_factor", Attribute(amp.growth_factor)},
                                   {"backoff_factor", Attribute(amp.backoff_factor)},
                                   {"growth_interval", Attribute(amp.growth_interval)}},
                                  graph.unique_name("update_loss_scale"));
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

  const RecomputeStrategy& recompute = strategy.recompute;
  if (recompute.mode != RecomputeMode::kOff) {
    RecomputeOptions options;
    options.loss = loss;
    options.checkpoints = recompute.checkpoints;
    options.automatic = recompute.mode == RecomputeMode::kAuto;
    options.memory_budget = recompute.memory_budget;
    options.estimate_peak = [&registry](Graph& g) { return estimate_memory(g, registry).total(); };
    Recompute pass(options);
    pass.run(graph, context);
    result.recompute_checkpoints = pass.checkpoints();
    result.recomputed_nodes = pass.recomputed_nodes();
    result.peak_bytes_before_recompute = pass.peak_before();
    result.peak_bytes_after_recompute = pass.peak_after();
  } else if (recompute.memory_budget > 0) {
    throw Error(ErrorKind::kInvalidArgument, "minimize: a memory budget needs recompute (auto)");
  }

  const DataParallelStrategy& data_parallel = strategy.data_parallel;
  if (data_parallel.ranks < 1) {
    throw Error(ErrorKind::kInvalidArgument, "minimize: data parallelism needs at least 1 rank, got " +
                                                 std::to_string(data_parallel.ranks));
  }
  if (data_parallel.ranks > 1) {
    DataParallelOptions options;
    for (const std::string& name : data_parallel.distributed_parameters) {
      if (std::find(result.parameters.begin(), result.parameters.end(), name) == result.parameters.end()) {
        throw Error(ErrorKind::kInvalidArgument, "minimize: the distributed parameter '" + name +
                                                     "' is not a parameter the loss trains");
      }
    }
    for (size_t i = 0; i < trained.size(); ++i) {
      const bool distributed = data_parallel.distributed_parameters.count(trained[i]->name()) != 0;
      (distributed ? options.local_gradients : options.gradients).push_back(raw_grads[i]->name());
    }
    options.loss = loss;
    DataParallel pass(options);
    pass.run(graph, context);
    result.ranks = data_parallel.ranks;
    result.allreduces = pass.result().allreduces;
  }
  // Last, since it removes the gradient Casts the passes above name: their
  // producers write the f32 gradients themselves.
  if (amp.enabled) {
    F32GradientAccumulation accumulate;
    accumulate.run(graph, context);
    result.amp_f32_gradient_sums = accumulate.folded_casts();
  }
  return result;
}

}  // namespace weir
