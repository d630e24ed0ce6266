#include "passes/rewrite_rule.h"

#include <set>

#include "passes/graph_match.h"

namespace weir {

Node* Rewriter::create(const Node& like, const std::string& op_type, const std::vector<Value*>& inputs,
                       size_t num_outputs, std::map<std::string, Attribute> attributes, const std::string& name) {
  Node* node = graph_.add_node(op_type, inputs, num_outputs, std::move(attributes), name);
  if (like.device()) node->set_device(*like.device());
  node->set_stream(like.stream());
  return node;
}

Node* Rewriter::producer_of(const Value* value, const char* op_type) const {
  Node* producer = value != nullptr ? value->producer() : nullptr;
  return producer != nullptr && producer->op_type() == op_type && producer->domain().empty() ? producer : nullptr;
}

void Rewriter::replace(Node& root, Value* value) {
  Value* old = root.output(0);
  Node* producer = value->producer();
  if (is_graph_output(graph_, old) && producer != nullptr && value->uses().empty() && !is_graph_output(graph_, value)) {
    // A graph output keeps its name (callers feed and fetch by name): the
    // new producer takes over the old value instead of its fresh one.
    root.set_output(0, graph_.add_value(graph_.unique_name(old->name() + "_replaced"), old->type()));
    producer->set_output(static_cast<size_t>(value->producer_output()), old);
    graph_.remove_value(value);
  } else {
    graph_.replace_all_uses(old, value);
  }
  std::vector<Value*> inputs = root.inputs();
  remove(&root);
  remove_unread_producers(inputs);
}

void Rewriter::remove(Node* node) {
  removed_.insert(node);
  graph_.remove_node(node);
}

void Rewriter::remove_unread_producers(const std::vector<Value*>& values) {
  // A worklist of live producers: a removed node's address may be reused by
  // a node added later, so liveness is never judged by address.
  std::set<Node*> pending;
  for (Value* value : values) {
    if (value != nullptr && value->producer() != nullptr) pending.insert(value->producer());
  }
  while (!pending.empty()) {
    Node* producer = *pending.begin();
    pending.erase(pending.begin());
    if (!producer->control_outputs().empty()) continue;
    bool unread = true;
    for (Value* output : producer->outputs()) unread = unread && output->uses().empty() && !is_graph_output(graph_, output);
    if (!unread) continue;
    // Only pure computations go: a node with side effects stays for DCE to judge.
    const OpSchema* schema = context_.registry().find(producer->op_type(), producer->domain());
    if (schema == nullptr || schema->has(OpTrait::kStateful) || schema->has(OpTrait::kSideEffects)) continue;
    std::vector<Value*> inputs = producer->inputs();
    remove(producer);
    for (Value* value : inputs) {
      if (value != nullptr && value->producer() != nullptr) pending.insert(value->producer());
    }
  }
}

RewriteDriver::RewriteDriver(std::string name, std::vector<std::unique_ptr<RewriteRule>> rules, int max_sweeps)
    : name_(std::move(name)), rules_(std::move(rules)), max_sweeps_(max_sweeps) {
  for (const auto& rule : rules_) {
    for (const std::string& op : rule->root_ops()) by_root_[op].push_back(rule.get());
  }
}

bool RewriteDriver::run(Graph& graph, PassContext& context) {
  bool any = false;
  for (int sweep = 0; sweep < max_sweeps_; ++sweep) {
    Rewriter rewriter(graph, context);
    bool changed = false;
    for (Node* node : graph.nodes()) {
      if (rewriter.removed(node) || !node->domain().empty()) continue;
      auto rules = by_root_.find(node->op_type());
      if (rules == by_root_.end()) continue;
      for (RewriteRule* rule : rules->second) {
        if (rule->apply(*node, rewriter)) {
          changed = true;
          break;  // `node` may be gone; later rules see it (or its replacement) next sweep
        }
      }
    }
    if (!changed) break;
    any = true;
  }
  return any;
}

}  // namespace weir
