#include "passes/collectives/deep_gradient_compression.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "passes/training/training_step.h"

namespace weir {

namespace {

[[noreturn]] void refuse(ErrorKind kind, const std::string& why) { throw Error(kind, "deep_gradient_compression: " + why); }

Node* momentum_update_of(const Value* param) {
  for (const Use& use : param->uses()) {
    if (use.input_index == 0 && use.node->op_type() == "Momentum" && use.node->domain().empty()) return use.node;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> dgc_parameters(const Graph& graph, const std::vector<std::string>& parameters,
                                        const std::set<std::string>& excluded) {
  std::vector<std::string> chosen;
  for (const std::string& name : parameters) {
    if (excluded.count(name) != 0) continue;
    const Value* value = graph.find_value(name);
    if (value == nullptr || value->dtype() != DType::kFloat32 || !value->shape().is_static()) continue;
    if (value->shape().num_elements() >= kDgcMinElements) chosen.push_back(name);
  }
  return chosen;
}

bool DeepGradientCompression::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  TrainingGraph& result = step.graph;
  if (options_.ranks < 2) refuse(ErrorKind::kInvalidArgument, "needs a data-parallel world of at least 2 ranks");
  if (options_.rampup_begin_step < 0 || options_.rampup_step < 1 || options_.sparsity.empty()) {
    refuse(ErrorKind::kInvalidArgument, "rampup_begin_step must be at least 0, rampup_step at least 1 and the "
                                        "sparsity list not empty");
  }
  for (double sparsity : options_.sparsity) {
    if (!(sparsity >= 0 && sparsity < 1)) {
      refuse(ErrorKind::kInvalidArgument, "every sparsity must be in [0, 1), got " + std::to_string(sparsity));
    }
  }
  Value* lr = graph.find_value(result.lr_input);
  if (lr == nullptr) refuse(ErrorKind::kInvalidArgument, "runs after optimizer_updates (no '" + result.lr_input + "')");
  Value* step_number = step_number_input(graph, result, "deep_gradient_compression");
  const OpRegistry& registry = context.registry();

  const std::vector<std::string> chosen = dgc_parameters(graph, result.parameters, options_.excluded);
  if (chosen.empty()) return false;
  // The phase, from the 1-based step: dense while step - 1 < rampup_begin_step.
  Value* first_sparse = graph.add_constant(graph.unique_name("dgc/first_sparse_step"),
                                           Tensor::scalar<int64_t>(int64_t{options_.rampup_begin_step} + 1));
  Value* dense =
      add_training_node(graph, registry, "Less", {step_number, first_sparse}, 1, {}, "dgc/dense_phase")->output(0);
  Value* sparse = add_training_node(graph, registry, "Not", {dense}, 1, {}, "dgc/sparse_phase")->output(0);
  std::vector<int64_t> world(static_cast<size_t>(options_.ranks));
  for (int r = 0; r < options_.ranks; ++r) world[static_cast<size_t>(r)] = r;
  const double clip = options_.clip_norm > 0 ? options_.clip_norm / std::sqrt(static_cast<double>(options_.ranks)) : 0;

  for (const std::string& name : chosen) {
    Value* param = graph.find_value(name);
    Node* update = momentum_update_of(param);
    if (update == nullptr) {
      refuse(ErrorKind::kUnsupported, "the parameter '" + name + "' has no Momentum update; DGC needs the Momentum "
                                      "optimizer");
    }
    if (update->num_inputs() != 4) {
      refuse(ErrorKind::kUnsupported, "the Momentum update '" + update->name() + "' skips on a flag (loss scaling or "
                                      "gradient merge), which DGC does not support");
    }
    Value* gradient = update->input(1);
    Value* velocity = update->input(2);
    const std::optional<Device> device = update->device();
    const double momentum = update->has_attr("momentum") ? update->attr("momentum").f() : 0.9;
    const int64_t nesterov = update->has_attr("nesterov") ? update->attr("nesterov").i() : 0;
    const double weight_decay = update->has_attr("weight_decay") ? update->attr("weight_decay").f() : 0.0;

    Value* accumulation = graph.add_persistent(name + "/dgc_v", param->type(), PersistentRole::kOptimizerState,
                                               Tensor(DType::kFloat32, param->shape().sizes()));
    result.optimizer_state.push_back(accumulation->name());
    // The update's rule (DgcMomentum's attributes), and the encoder's on top.
    const std::map<std::string, Attribute> rule = {{"momentum", Attribute(momentum)},
                                                   {"nesterov", Attribute(nesterov)},
                                                   {"weight_decay", Attribute(weight_decay)},
                                                   {"rampup_begin_step", Attribute(int64_t{options_.rampup_begin_step})}};
    std::map<std::string, Attribute> encoding = rule;
    encoding.emplace("clip_norm", Attribute(clip));
    encoding.emplace("rampup_step", Attribute(int64_t{options_.rampup_step}));
    encoding.emplace("sparsity", Attribute(options_.sparsity));
    Node* encode = add_training_node(graph, registry, "DgcEncode",
                                     {gradient, param, velocity, accumulation, step_number}, 1, encoding,
                                     name + "/dgc_encode", device);
    Node* gather = add_training_node(graph, registry, "AllGather", {encode->output(0), dense}, 1,
                                     {{"group", Attribute(world)}, {"tag", Attribute("dgc/" + name)}},
                                     name + "/dgc_allgather", device);
    Node* average = add_training_node(graph, registry, "AllReduce", {gradient, sparse}, 1,
                                      {{"reduction", Attribute(std::string("avg"))}, {"tag", Attribute("dgc/dense/" + name)}},
                                      name + "/dgc_allreduce", device);
    Node* apply = add_training_node(
        graph, registry, "DgcMomentum",
        {param, velocity, average->output(0), gather->output(0), encode->output(0), lr, step_number}, 2, rule,
        name + "/dgc_momentum", device);
    // The new update takes the old one's place: after every reader of the
    // parameter, before whatever waited for it.
    for (Node* reader : update->control_inputs()) apply->add_control_input(reader);
    for (Node* node : graph.nodes()) {
      const std::vector<Node*>& waits = node->control_inputs();
      if (std::find(waits.begin(), waits.end(), update) != waits.end()) {
        node->remove_control_input(update);
        node->add_control_input(apply);
      }
    }
    for (size_t i = 0; i < update->num_outputs() && i < apply->num_outputs(); ++i) {
      if (update->output(i) != nullptr) graph.replace_all_uses(update->output(i), apply->output(i));
    }
    graph.remove_node(update);
    compressed_.push_back(name);
  }
  result.dgc_parameters = compressed_;
  return true;
}

}  // namespace weir
