#include "passes/collectives/local_sgd.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "passes/collectives/skip_communication.h"
#include "passes/training/training_step.h"

namespace weir {

namespace {

constexpr const char* kSchedule = "localsgd/schedule";

[[noreturn]] void refuse(ErrorKind kind, const std::string& why) { throw Error(kind, "local_sgd: " + why); }

// The node that writes `value` in place (its first input and output): the
// optimizer update of a parameter, the Assign of a running statistic.
Node* writer_of(const Value* value, const OpRegistry& registry) {
  Node* writer = nullptr;
  for (const Use& use : value->uses()) {
    const OpSchema* schema = registry.find(use.node->op_type(), use.node->domain());
    if (use.input_index != 0 || schema == nullptr || !schema->has(OpTrait::kSideEffects) ||
        use.node->num_outputs() == 0 || use.node->output(0) == nullptr) {
      continue;
    }
    if (writer != nullptr) {
      refuse(ErrorKind::kUnsupported, "'" + value->name() + "' is written by both '" + writer->name() + "' and '" +
                                          use.node->name() + "'; LocalSGD averages values written once a step");
    }
    writer = use.node;
  }
  return writer;
}

}  // namespace

bool LocalSgd::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  TrainingGraph& result = step.graph;
  const OpRegistry& registry = context.registry();
  if (options_.k_steps < 1 || options_.init_k_steps < 1 || options_.begin_step < 0) {
    refuse(ErrorKind::kInvalidArgument, "k_steps and init_k_steps must be at least 1 and begin_step at least 0, got " +
                                            std::to_string(options_.k_steps) + ", " + std::to_string(options_.init_k_steps) +
                                            " and " + std::to_string(options_.begin_step));
  }
  if (!step.merge_skip.empty()) refuse(ErrorKind::kUnsupported, "LocalSGD with gradient merge is not supported; set one");
  if (!step.found_inf.empty()) {
    refuse(ErrorKind::kUnsupported, "LocalSGD with dynamic loss scaling (fp16 AMP) is not supported: the ranks' "
                                    "scales would drift apart; use bf16 AMP");
  }
  for (const std::string& name : options_.excluded) {
    if (std::find(result.parameters.begin(), result.parameters.end(), name) == result.parameters.end()) {
      refuse(ErrorKind::kInvalidArgument, "the distributed parameter '" + name + "' is not a parameter the loss trains");
    }
  }
  Value* loss = graph.find_value(result.loss);
  Value* lr = graph.find_value(result.lr_input);
  if (loss == nullptr || lr == nullptr) refuse(ErrorKind::kInvalidArgument, "runs after optimizer_updates (no loss or lr)");
  Value* step_number = step_number_input(graph, result, "local_sgd");

  // What to average: the trained parameters, then the f32 buffers the step writes.
  std::vector<Value*> values;
  for (const std::string& name : result.parameters) {
    if (!options_.excluded.count(name)) values.push_back(graph.find_value(name));
  }
  for (Value* value : graph.persistents()) {
    if (value->role() == PersistentRole::kBuffer && value->dtype() == DType::kFloat32 && writer_of(value, registry) != nullptr) {
      values.push_back(value);
    }
  }

  Tensor initial(DType::kFloat64, {4});
  initial.data<double>()[0] = 0;
  initial.data<double>()[1] = options_.adaptive ? options_.init_k_steps : options_.k_steps;
  initial.data<double>()[2] = initial.data<double>()[3] = 0;
  Value* schedule = graph.add_persistent(graph.unique_name(kSchedule), {DType::kFloat64, Shape{4}},
                                         PersistentRole::kOptimizerState, std::move(initial));
  result.optimizer_state.push_back(schedule->name());
  Node* decide = add_training_node(graph, registry, "LocalSgdSchedule", {schedule, step_number}, 1,
                                   {{"begin_step", Attribute(int64_t{options_.begin_step})}}, "localsgd/communicate");
  Value* communicate = decide->output(0);
  Value* skip = add_training_node(graph, registry, "Not", {communicate}, 1, {}, "localsgd/skip")->output(0);
  step.localsgd_skip = skip->name();

  std::vector<Node*> averages;
  for (Value* value : values) {
    if (value == nullptr) continue;
    if (value->dtype() != DType::kFloat32 || !value->shape().is_static()) {
      refuse(ErrorKind::kUnsupported, "'" + value->name() + "' is " + value->type().to_string() +
                                          "; LocalSGD averages f32 values of static shape");
    }
    Node* writer = writer_of(value, registry);
    if (writer == nullptr) refuse(ErrorKind::kInvalidArgument, "no update writes the parameter '" + value->name() + "'");
    Value* updated = writer->output(0);
    Value* snapshot = graph.add_persistent(value->name() + "/localsgd_snapshot", value->type(),
                                           PersistentRole::kOptimizerState,
                                           value->data().defined() ? value->data().clone()
                                                                    : Tensor(DType::kFloat32, value->shape().sizes()));
    result.optimizer_state.push_back(snapshot->name());
    const std::optional<Device> device = writer->device();
    const std::string& name = value->name();
    Node* difference =
        add_training_node(graph, registry, "Sub", {snapshot, updated}, 1, {}, name + "/localsgd_delta", device);
    Node* reduce =
        add_training_node(graph, registry, "AllReduce", {difference->output(0)}, 1,
                          {{"reduction", Attribute(std::string("avg"))}, {"tag", Attribute("dp/localsgd/" + name)}},
                          name + "/localsgd_allreduce", device);
    add_training_node(graph, registry, "LocalSgdAverage", {updated, snapshot, reduce->output(0), communicate}, 2, {},
                      name + "/localsgd_average", device);
    averages.push_back(difference);
    averaged_.push_back(value->name());
  }
  // The schedule moves on after this step's decision was read.
  std::vector<Value*> advance_inputs = {schedule, step_number, communicate};
  std::map<std::string, Attribute> advance_attributes;
  if (options_.adaptive) {
    Node* world_loss = add_training_node(
        graph, registry, "AllReduce", {loss, skip}, 1,
        {{"reduction", Attribute(std::string("avg"))}, {"tag", Attribute(std::string("localsgd/loss"))}}, "localsgd/world_loss");
    advance_inputs.push_back(world_loss->output(0));
    advance_inputs.push_back(lr);
    advance_attributes = {{"adaptive", Attribute(int64_t{1})}, {"init_k_steps", Attribute(int64_t{options_.init_k_steps})}};
  }
  Node* advance = add_training_node(graph, registry, "LocalSgdAdvance", advance_inputs, 1, std::move(advance_attributes),
                                    "localsgd/advance");
  advance->add_control_input(decide);
  step.localsgd_sources.clear();
  for (Node* node : averages) step.localsgd_sources.push_back(node->name());
  result.localsgd_values = static_cast<int>(averaged_.size());
  result.localsgd_adaptive = options_.adaptive;
  return true;
}

bool SkipLocalSgdCommunication::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  Value* skip = graph.find_value(step.localsgd_skip);
  if (skip == nullptr) refuse(ErrorKind::kInvalidArgument, "the step has no LocalSGD (run local_sgd first)");
  std::vector<Node*> sources;
  for (const std::string& name : step.localsgd_sources) {
    if (Node* node = graph.find_node(name)) sources.push_back(node);
  }
  collectives_ = skip_collectives_after(sources, skip, "skip_local_sgd_communication");
  step.graph.localsgd_collectives = collectives_ + (step.graph.localsgd_adaptive ? 1 : 0);
  return collectives_ > 0;
}

}  // namespace weir
