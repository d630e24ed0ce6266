#include "passes/training/gradient_merge.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "core/type_inference.h"
#include "passes/collectives/skip_communication.h"
#include "passes/training/training_step.h"

namespace weir {

bool GradientMerge::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  TrainingGraph& result = step.graph;
  if (options_.k_steps < 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "gradient_merge: k_steps must be at least 1, got " + std::to_string(options_.k_steps));
  }
  if (!step.found_inf.empty() || !result.loss_scale.empty()) {
    throw Error(ErrorKind::kUnsupported, "gradient_merge: dynamic loss scaling (fp16 AMP) is not supported with "
                                         "gradient merge; use bf16 AMP, or turn loss scaling off");
  }
  if (step.raw_gradients.size() != result.parameters.size() || step.gradients != step.raw_gradients) {
    throw Error(ErrorKind::kInvalidArgument, "gradient_merge: runs right after differentiate, on autodiff's gradients");
  }
  const int64_t k = options_.k_steps;
  Value* step_number = step_number_input(graph, result, "gradient_merge");
  const OpRegistry& registry = context.registry();
  Value* k_value = graph.add_constant(graph.unique_name("gradient_merge/k_steps"), Tensor::scalar<int64_t>(k));
  Value* zero = graph.add_constant(graph.unique_name("gradient_merge/zero"), Tensor::scalar<int64_t>(0));
  auto update_step_flag = [&](const std::string& prefix) {
    Value* phase = add_training_node(graph, registry, "Mod", {step_number, k_value}, 1, {}, prefix + "/phase")->output(0);
    return add_training_node(graph, registry, "Equal", {phase, zero}, 1, {}, prefix + "/apply")->output(0);
  };
  // Two copies of the flag: the accumulators read one, inside each rank's
  // forward-and-backward part; the updates and the collectives read the
  // other, after it. Sharing one would make the data-parallel rewrite see
  // a bool crossing from the per-rank part to the tail and refuse it (it
  // averages what crosses), though every rank computes the same flag.
  Value* apply = update_step_flag("gradient_merge/accumulate");
  Value* skip =
      add_training_node(graph, registry, "Not", {update_step_flag("gradient_merge")}, 1, {}, "gradient_merge/skip")->output(0);
  Value* updates =
      add_training_node(graph, registry, "Div", {step_number, k_value}, 1, {}, "gradient_merge/updates")->output(0);
  step.merge_skip = skip->name();
  step.update_step = updates->name();

  // The accumulators are added in the order the backward pass produces the
  // gradients, which is the order the topological sort (ties broken by
  // insertion) gives them, and so the order gradient buckets fill in.
  std::unordered_map<const Node*, size_t> position;
  const std::vector<Node*> topological = graph.topological_order();
  for (size_t i = 0; i < topological.size(); ++i) position[topological[i]] = i;
  std::vector<size_t> production(step.raw_gradients.size()), produced_at(step.raw_gradients.size(), 0);
  for (size_t i = 0; i < production.size(); ++i) {
    production[i] = i;
    const Value* gradient = graph.find_value(step.raw_gradients[i]);
    if (gradient == nullptr) {
      throw Error(ErrorKind::kInvalidArgument, "gradient_merge: no gradient '" + step.raw_gradients[i] + "'");
    }
    if (gradient->producer() != nullptr) produced_at[i] = position[gradient->producer()];
  }
  std::stable_sort(production.begin(), production.end(),
                   [&](size_t a, size_t b) { return produced_at[a] < produced_at[b]; });

  const double scale = options_.avg ? 1.0 / static_cast<double>(k) : 1.0;
  for (size_t i : production) {
    Value* gradient = graph.find_value(step.raw_gradients[i]);
    if (gradient->dtype() != DType::kFloat32) {
      throw Error(ErrorKind::kUnsupported, "gradient_merge: the gradient '" + gradient->name() + "' of '" +
                                               result.parameters[i] + "' is " + gradient->type().to_string() +
                                               "; gradients are accumulated in f32");
    }
    Value* accumulator = graph.add_persistent(result.parameters[i] + "/gradient_merge", gradient->type(),
                                              PersistentRole::kOptimizerState,
                                              Tensor(DType::kFloat32, gradient->shape().sizes()));
    result.optimizer_state.push_back(accumulator->name());
    step.rank_local_state.push_back(accumulator->name());
    Node* merge = graph.add_node("GradientMerge", {accumulator, gradient, apply}, 1, {{"scale", Attribute(scale)}},
                                 graph.unique_name(result.parameters[i] + "/gradient_merge"));
    if (Node* producer = gradient->producer(); producer != nullptr && producer->device()) {
      merge->set_device(*producer->device());
    }
    infer_node_types(*merge, context.registry());
    step.raw_gradients[i] = step.gradients[i] = merge->output(0)->name();
  }
  result.gradient_merge_steps = options_.k_steps;
  return true;
}

bool SkipMergedCommunication::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  Value* skip = graph.find_value(step.merge_skip);
  if (skip == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "skip_merged_communication: the step has no gradient merge (run "
                                             "gradient_merge first)");
  }
  std::vector<Node*> merges;
  for (Node* node : graph.nodes()) {
    if (node->op_type() == "GradientMerge" && node->domain().empty()) merges.push_back(node);
  }
  collectives_ = skip_collectives_after(merges, skip, "skip_merged_communication");
  return collectives_ > 0;
}

}  // namespace weir
