#include "passes/autodiff/autodiff.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/dtype_dispatch.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

// The backward state: gradient contributions per forward value, summed on
// first read.
class Backward {
 public:
  Backward(Graph& graph, const OpRegistry& registry) : graph_(graph), registry_(registry) {}

  void contribute(const Value* value, Value* grad) { contributions_[value].push_back(grad); }

  // The summed gradient of `value`, or nullptr when nothing contributed.
  Value* gradient(const Value* value, const Node* device_of) {
    auto it = contributions_.find(value);
    if (it == contributions_.end() || it->second.empty()) return nullptr;
    std::vector<Value*>& parts = it->second;
    if (parts.size() > 1) {
      Node* sum = graph_.add_node("Sum", parts, 1, {}, graph_.unique_name(value->name() + "_grad_sum"));
      if (device_of != nullptr && device_of->device()) sum->set_device(*device_of->device());
      infer_node_types(*sum, registry_);
      parts = {sum->output(0)};
    }
    return parts.front();
  }

 private:
  Graph& graph_;
  const OpRegistry& registry_;
  std::unordered_map<const Value*, std::vector<Value*>> contributions_;
};

std::string type_of(const Value& value) { return value.type().to_string(); }

}  // namespace

std::vector<Value*> append_backward(Graph& graph, Value* loss, const std::vector<Value*>& wrt,
                                    const OpRegistry& registry) {
  if (loss == nullptr) throw Error(ErrorKind::kInvalidArgument, "autodiff: no loss value given");
  infer_graph_types(graph, registry);
  if (!is_floating(loss->dtype()) || !loss->shape().is_static() || loss->shape().num_elements() != 1) {
    throw Error(ErrorKind::kInvalidArgument, "autodiff: the loss '" + loss->name() +
                                                 "' must be a floating-point value with one element, got " +
                                                 type_of(*loss));
  }
  std::vector<Node*> order = graph.topological_order();

  // Forward: values that depend on a wrt value (and can carry a gradient).
  std::unordered_set<const Value*> requires_grad;
  for (Value* w : wrt) {
    if (w == nullptr) throw Error(ErrorKind::kInvalidArgument, "autodiff: a wrt value is null");
    if (is_floating(w->dtype())) requires_grad.insert(w);
  }
  for (Node* node : order) {
    bool any = std::any_of(node->inputs().begin(), node->inputs().end(),
                           [&](const Value* v) { return v != nullptr && requires_grad.count(v); });
    if (!any) continue;
    for (Value* out : node->outputs()) {
      if (out != nullptr && is_floating(out->dtype())) requires_grad.insert(out);
    }
  }
  // Backward: nodes the loss depends on.
  const std::unordered_set<const Node*> feeds_loss = nodes_feeding(loss);

  std::unordered_set<const Node*> forward(order.begin(), order.end());

  Backward backward(graph, registry);
  std::vector<Value*> old_constants = graph.constants();
  std::unordered_set<const Value*> forward_constants(old_constants.begin(), old_constants.end());
  {
    Tensor one(loss->dtype(), loss->shape().sizes());
    dispatch_dtype(loss->dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) one.data<T>()[0] = store<T>(static_cast<ComputeType<T>>(1));
    });
    backward.contribute(loss, graph.add_constant(graph.unique_name(loss->name() + "_grad_seed"), one));
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    if (!feeds_loss.count(node)) continue;
    bool input_needs = std::any_of(node->inputs().begin(), node->inputs().end(),
                                   [&](const Value* v) { return v != nullptr && requires_grad.count(v); });
    if (!input_needs) continue;
    std::vector<Value*> out_grads;
    bool any = false;
    for (Value* out : node->outputs()) {
      Value* grad = out != nullptr ? backward.gradient(out, node) : nullptr;
      out_grads.push_back(grad);
      any = any || grad != nullptr;
    }
    if (!any) continue;
    const OpSchema& schema = registry.get(node->op_type(), node->domain());
    if (!schema.differentiable()) {
      throw Error(ErrorKind::kUnsupported, "autodiff: node '" + node->name() + "' (" + node->op_type() +
                                               ") has no gradient rule, and the loss '" + loss->name() +
                                               "' depends on a differentiated value through it")
          .with_node(node->name());
    }
    std::vector<Node*> before = graph.nodes();
    std::unordered_set<const Node*> existing(before.begin(), before.end());
    GradientContext ctx(graph, *node, out_grads);
    schema.gradient_rule()(ctx);
    for (Node* added : graph.nodes()) {
      if (existing.count(added)) continue;
      if (node->device()) added->set_device(*node->device());
      infer_node_types(*added, registry);
    }
    for (size_t i = 0; i < node->num_inputs(); ++i) {
      Value* grad = i < ctx.input_grads().size() ? ctx.input_grads()[i] : nullptr;
      Value* input = node->input(i);
      if (grad == nullptr || input == nullptr || !requires_grad.count(input)) continue;
      backward.contribute(input, grad);
    }
  }

  std::vector<Value*> result;
  std::unordered_set<const Value*> keep;
  for (Value* w : wrt) {
    Node* device_of = !w->uses().empty() ? w->uses().front().node : nullptr;
    Value* grad = requires_grad.count(w) ? backward.gradient(w, device_of) : nullptr;
    result.push_back(grad);
    if (grad != nullptr) keep.insert(grad);
  }

  // Backward nodes whose outputs nobody reads (a data input's gradient, the
  // unused half of a rule) are removed, last first.
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<Node*> nodes = graph.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* node = *it;
      if (forward.count(node)) continue;
      if (has_trait(registry.get(node->op_type(), node->domain()).traits(), OpTrait::kSideEffects)) continue;
      bool used = false;
      for (Value* out : node->outputs()) {
        if (out == nullptr) continue;
        if (!out->uses().empty() || keep.count(out) || is_graph_output(graph, out)) used = true;
      }
      if (used || !node->control_outputs().empty()) continue;
      graph.remove_node(node);
      changed = true;
    }
  }
  // Constants the removed nodes read (scalars a rule made) go too.
  std::vector<Value*> constants = graph.constants();
  for (Value* constant : constants) {
    // Only constants the backward pass made: the forward graph's unused
    // constants are left as they were.
    if (constant->uses().empty() && !is_graph_output(graph, constant) && !keep.count(constant) && !forward_constants.count(constant)) {
      graph.remove_value(constant);
    }
  }
  return result;
}

bool Autodiff::run(Graph& graph, PassContext& context) {
  gradients_.clear();
  Value* loss = graph.find_value(options_.loss);
  if (loss == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "autodiff: the loss '" + options_.loss + "' is not a value of graph '" +
                                                 graph.name() + "'");
  }
  std::vector<Value*> wrt;
  if (options_.wrt.empty()) {
    for (Value* v : graph.persistents()) {
      if (v->role() == PersistentRole::kParameter) wrt.push_back(v);
    }
  } else {
    for (const std::string& name : options_.wrt) {
      Value* v = graph.find_value(name);
      if (v == nullptr) {
        throw Error(ErrorKind::kInvalidArgument, "autodiff: '" + name + "' (wrt) is not a value of graph '" +
                                                     graph.name() + "'");
      }
      wrt.push_back(v);
    }
  }
  std::vector<Value*> grads = append_backward(graph, loss, wrt, context.registry());
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (grads[i] == nullptr) continue;
    gradients_[wrt[i]->name()] = grads[i];
    if (options_.add_outputs) graph.add_output(grads[i]);
  }
  return true;
}

}  // namespace weir
