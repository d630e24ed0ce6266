#include "passes/training/parameter_server_updates.h"

#include <map>
#include <unordered_set>

#include "core/error.h"
#include "passes/training/training_step.h"

namespace weir {

namespace {

constexpr const char* kStream = "comm";

TableInitializer initializer_of(const Node& lookup) {
  TableInitializer init;
  const std::string kind = lookup.has_attr("init") ? lookup.attr("init").s() : "zeros";
  if (kind == "zeros") {
    init.kind = TableInitializer::Kind::kZeros;
  } else if (kind == "uniform") {
    init.kind = TableInitializer::Kind::kUniform;
  } else if (kind == "normal") {
    init.kind = TableInitializer::Kind::kNormal;
  } else {
    throw Error(ErrorKind::kInvalidArgument, "parameter_server_updates: node '" + lookup.name() + "' has init '" + kind +
                                                 "'; expected zeros, uniform or normal");
  }
  init.scale = lookup.has_attr("init_scale") ? lookup.attr("init_scale").f() : 0.0;
  init.seed = lookup.has_attr("init_seed") ? static_cast<uint64_t>(lookup.attr("init_seed").i()) : 0;
  return init;
}

}  // namespace

TableRule table_rule_of(const OptimizerConfig& optimizer) {
  if (optimizer.weight_decay != 0) {
    throw Error(ErrorKind::kUnsupported, "parameter servers apply no weight decay (got " +
                                             std::to_string(optimizer.weight_decay) + "); leave it 0");
  }
  switch (optimizer.kind) {
    case OptimizerKind::kSgd: return TableRule::kSgd;
    case OptimizerKind::kAdagrad: return TableRule::kAdagrad;
    case OptimizerKind::kAdam: return TableRule::kAdam;
    default:
      throw Error(ErrorKind::kUnsupported, "parameter servers run sgd, adagrad or adam, not " +
                                               optimizer_kind_name(optimizer.kind));
  }
}

bool ParameterServerUpdates::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  TrainingGraph& result = step.graph;
  const OpRegistry& registry = context.registry();
  if (strategy_.mode == PsMode::kOff) {
    throw Error(ErrorKind::kInvalidArgument, "parameter_server_updates: the strategy's parameter-server mode is off");
  }
  const bool sync = strategy_.mode == PsMode::kSync;
  if (sync && strategy_.workers < 1) {
    throw Error(ErrorKind::kInvalidArgument, "parameter_server_updates: sync mode needs at least 1 worker, got " +
                                                 std::to_string(strategy_.workers));
  }
  if (!step.found_inf.empty() || !step.merge_skip.empty()) {
    throw Error(ErrorKind::kUnsupported, "parameter_server_updates: loss scaling and gradient merge skip updates, "
                                         "which the servers cannot; turn them off");
  }
  Value* loss_value = graph.find_value(result.loss);
  if (loss_value == nullptr) throw Error(ErrorKind::kInvalidArgument, "parameter_server_updates: no loss '" + result.loss + "'");

  ParameterTableConfig base;
  base.rule = table_rule_of(optimizer_);
  base.epsilon = optimizer_.epsilon;
  base.beta1 = optimizer_.beta1;
  base.beta2 = optimizer_.beta2;
  base.sync_workers = sync ? strategy_.workers : 0;

  Value* lr = graph.add_input(result.lr_input, {DType::kFloat32, Shape{}});
  // The round every op names in sync mode: the step, counted from 0.
  Value* round = nullptr;
  if (sync) {
    Value* step_value = step_number_input(graph, result, name());
    Value* one = graph.add_constant(graph.unique_name("ps/one"), Tensor::scalar<int64_t>(1));
    round = add_training_node(graph, registry, "Sub", {step_value, one}, 1, {}, "ps/round")->output(0);
  }
  auto with_round = [&](std::vector<Value*> inputs) {
    if (round != nullptr) inputs.push_back(round);
    return inputs;
  };
  auto on_comm_stream = [](Node* node, const Value* near) {
    node->set_stream(kStream);
    if (const Node* producer = near->producer(); producer != nullptr && producer->device()) node->set_device(*producer->device());
    return node;
  };

  for (size_t i = 0; i < result.parameters.size(); ++i) {
    Value* param = graph.find_value(result.parameters[i]);
    Value* gradient = graph.find_value(step.gradients[i]);
    if (param->dtype() != DType::kFloat32 || !param->shape().is_static()) {
      throw Error(ErrorKind::kUnsupported, "parameter_server_updates: parameter '" + param->name() + "' is " +
                                               param->type().to_string() +
                                               "; dense tables hold f32 parameters of a static shape");
    }
    ParameterTableConfig table = base;
    table.name = param->name();
    table.sparse = false;
    table.width = param->shape().num_elements();
    result.parameter_tables.push_back(table);

    std::unordered_set<Node*> readers;
    collect_readers(param, registry, readers);
    Node* pull = add_training_node(graph, registry, "PsPullDense", with_round({param}), 1,
                                   {{"table", Attribute(table.name)}}, param->name() + "/ps_pull");
    pull->set_stream(kStream);
    for (Node* reader : readers) reader->add_control_input(pull);
    on_comm_stream(add_training_node(graph, registry, "PsPushDense", with_round({gradient, lr}), 0,
                                     {{"table", Attribute(table.name)}}, param->name() + "/ps_push"),
                   gradient);
  }

  std::map<std::string, ParameterTableConfig> sparse_tables;
  for (size_t i = 0; i < step.sparse_lookups.size(); ++i) {
    Node* lookup = graph.find_node(step.sparse_lookups[i]);
    Value* gradient = graph.find_value(step.sparse_gradients[i]);
    ParameterTableConfig table = base;
    table.name = lookup->attr("table").s();
    table.sparse = true;
    table.width = lookup->attr("width").i();
    table.init = initializer_of(*lookup);
    table.admit_after = lookup->has_attr("admit_after") ? lookup->attr("admit_after").i() : 1;
    auto [it, added] = sparse_tables.emplace(table.name, table);
    if (!added) {
      const ParameterTableConfig& first = it->second;
      if (first.width != table.width || first.init.kind != table.init.kind || first.init.scale != table.init.scale ||
          first.init.seed != table.init.seed || first.admit_after != table.admit_after) {
        throw Error(ErrorKind::kInvalidArgument, "parameter_server_updates: node '" + lookup->name() +
                                                     "' reads sparse table '" + table.name +
                                                     "' with another width, initializer or admission than an "
                                                     "earlier lookup of it");
      }
    } else {
      result.parameter_tables.push_back(table);
    }
    lookup->set_stream(kStream);
    if (round != nullptr && lookup->num_inputs() < 2) lookup->add_input(round);
    on_comm_stream(add_training_node(graph, registry, "PsPushSparse", with_round({lookup->input(0), gradient, lr}), 0,
                                     {{"table", Attribute(table.name)}, {"width", Attribute(table.width)}},
                                     lookup->name() + "/ps_push"),
                   gradient);
  }
  result.ps_mode = ps_mode_name(strategy_.mode);

  make_first_output(graph, loss_value);
  return true;
}

}  // namespace weir
