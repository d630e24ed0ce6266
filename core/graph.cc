#include "core/graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_set>

#include "core/error.h"

namespace weir {

std::string_view value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kIntermediate: return "intermediate";
    case ValueKind::kInput: return "input";
    case ValueKind::kConstant: return "constant";
    case ValueKind::kPersistent: return "persistent";
  }
  return "unknown";
}

std::string_view persistent_role_name(PersistentRole role) {
  switch (role) {
    case PersistentRole::kParameter: return "parameter";
    case PersistentRole::kOptimizerState: return "optimizer_state";
    case PersistentRole::kBuffer: return "buffer";
  }
  return "unknown";
}

namespace {

void erase_use(std::vector<Use>& uses, Use use) {
  auto it = std::find(uses.begin(), uses.end(), use);
  if (it != uses.end()) uses.erase(it);
}

void check_owned(const Graph* graph, const Value* value, const char* what) {
  if (value != nullptr && value->graph() != graph) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string(what) + " '" + value->name() + "' belongs to another graph");
  }
}

}  // namespace

// --- Node ------------------------------------------------------------------

void Node::set_input(size_t index, Value* value) {
  if (index >= inputs_.size()) {
    throw Error(ErrorKind::kInvalidArgument, "input index " + std::to_string(index) +
                                                 " is out of range").with_node(name_);
  }
  check_owned(graph_, value, "input");
  if (inputs_[index] != nullptr) erase_use(inputs_[index]->uses_, {this, static_cast<int>(index)});
  inputs_[index] = value;
  if (value != nullptr) value->uses_.push_back({this, static_cast<int>(index)});
}

void Node::add_input(Value* value) {
  check_owned(graph_, value, "input");
  inputs_.push_back(value);
  if (value != nullptr) value->uses_.push_back({this, static_cast<int>(inputs_.size() - 1)});
}

void Node::remove_input(size_t index) {
  if (index >= inputs_.size()) {
    throw Error(ErrorKind::kInvalidArgument, "input index " + std::to_string(index) +
                                                 " is out of range").with_node(name_);
  }
  // Later inputs shift down by one, so their uses are renumbered.
  for (size_t i = index; i < inputs_.size(); ++i) {
    if (inputs_[i] != nullptr) erase_use(inputs_[i]->uses_, {this, static_cast<int>(i)});
  }
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(index));
  for (size_t i = index; i < inputs_.size(); ++i) {
    if (inputs_[i] != nullptr) inputs_[i]->uses_.push_back({this, static_cast<int>(i)});
  }
}

void Node::set_output(size_t index, Value* value) {
  if (index >= outputs_.size() || value == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "output index " + std::to_string(index) +
                                                 " is out of range or the value is null").with_node(name_);
  }
  check_owned(graph_, value, "output");
  Value* old = outputs_[index];
  if (old != nullptr && old->producer_ == this) {
    old->producer_ = nullptr;
    old->producer_output_ = -1;
  }
  outputs_[index] = value;
  value->producer_ = this;
  value->producer_output_ = static_cast<int>(index);
}

const Attribute& Node::attr(const std::string& name) const {
  auto it = attributes_.find(name);
  if (it == attributes_.end()) {
    throw Error(ErrorKind::kInvalidArgument,
                op_type_ + " has no attribute '" + name + "'").with_node(name_);
  }
  return it->second;
}

void Node::add_control_input(Node* node) {
  if (node == nullptr || node->graph_ != graph_) {
    throw Error(ErrorKind::kInvalidArgument, "control input must be a node of the same graph")
        .with_node(name_);
  }
  if (std::find(control_inputs_.begin(), control_inputs_.end(), node) != control_inputs_.end()) return;
  control_inputs_.push_back(node);
  node->control_outputs_.push_back(this);
}

void Node::remove_control_input(Node* node) {
  auto it = std::find(control_inputs_.begin(), control_inputs_.end(), node);
  if (it == control_inputs_.end()) return;
  control_inputs_.erase(it);
  auto& outs = node->control_outputs_;
  outs.erase(std::find(outs.begin(), outs.end(), this));
}

// --- Graph: values -----------------------------------------------------------

Graph::Graph(std::string name) : name_(std::move(name)) {}

Graph::~Graph() = default;

Value* Graph::create_value(const std::string& name, TensorType type, ValueKind kind) {
  std::string final_name = name.empty() ? unique_name("v") : name;
  if (value_by_name_.count(final_name) != 0) {
    throw Error(ErrorKind::kInvalidGraph, "graph '" + name_ + "' already has a value named '" +
                                              final_name + "'");
  }
  auto value = std::unique_ptr<Value>(new Value(this, final_name, std::move(type), kind));
  Value* raw = value.get();
  values_.emplace(raw, std::move(value));
  value_by_name_.emplace(final_name, raw);
  return raw;
}

void Graph::rename_value(Value* value, const std::string& name) {
  if (value->name_ == name) return;
  if (name.empty() || value_by_name_.count(name) != 0) {
    throw Error(ErrorKind::kInvalidGraph, "graph '" + name_ + "' cannot rename value '" + value->name_ + "' to '" +
                                              name + "': " + (name.empty() ? "empty name" : "the name is taken"));
  }
  value_by_name_.erase(value->name_);
  value->name_ = name;
  value_by_name_.emplace(name, value);
}

Value* Graph::add_input(const std::string& name, TensorType type) {
  Value* value = create_value(name, std::move(type), ValueKind::kInput);
  inputs_.push_back(value);
  return value;
}

Value* Graph::add_constant(const std::string& name, Tensor tensor) {
  if (!tensor.defined()) {
    throw Error(ErrorKind::kInvalidArgument, "constant '" + name + "' needs a defined tensor");
  }
  Value* value = create_value(name, TensorType{tensor.dtype(), tensor.shape()}, ValueKind::kConstant);
  value->data_ = std::move(tensor);
  constants_.push_back(value);
  return value;
}

Value* Graph::add_persistent(const std::string& name, TensorType type, PersistentRole role,
                             Tensor initial) {
  Value* value = create_value(name, std::move(type), ValueKind::kPersistent);
  value->role_ = role;
  value->data_ = std::move(initial);
  persistents_.push_back(value);
  return value;
}

Value* Graph::add_value(const std::string& name, TensorType type) {
  return create_value(name, std::move(type), ValueKind::kIntermediate);
}

void Graph::remove_value(Value* value) {
  check_owned(this, value, "value");
  if (!value->uses_.empty() || value->producer_ != nullptr ||
      std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end()) {
    throw Error(ErrorKind::kInvalidArgument,
                "value '" + value->name() + "' is still produced, used or a graph output");
  }
  auto drop = [value](std::vector<Value*>& list) {
    list.erase(std::remove(list.begin(), list.end(), value), list.end());
  };
  drop(inputs_);
  drop(constants_);
  drop(persistents_);
  value_by_name_.erase(value->name());
  values_.erase(value);
}

void Graph::add_output(Value* value) {
  check_owned(this, value, "output");
  if (value == nullptr) throw Error(ErrorKind::kInvalidArgument, "graph output cannot be null");
  outputs_.push_back(value);
}

void Graph::set_output(size_t index, Value* value) {
  check_owned(this, value, "output");
  if (index >= outputs_.size() || value == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "graph output " + std::to_string(index) +
                                                 " does not exist or the value is null");
  }
  outputs_[index] = value;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? nullptr : it->second;
}

Node* Graph::find_node(const std::string& name) const {
  auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? nullptr : it->second;
}

std::string Graph::unique_name(const std::string& prefix) {
  for (;;) {
    std::string candidate = prefix + "_" + std::to_string(next_name_id_++);
    if (value_by_name_.count(candidate) == 0 && node_by_name_.count(candidate) == 0) return candidate;
  }
}

// --- Graph: nodes -------------------------------------------------------------

void Graph::register_node_name(Node* node) {
  if (node_by_name_.count(node->name_) != 0) {
    throw Error(ErrorKind::kInvalidGraph, "graph '" + name_ + "' already has a node named '" +
                                              node->name_ + "'");
  }
  node_by_name_.emplace(node->name_, node);
}

Node* Graph::add_node_with_outputs(const std::string& op_type, const std::vector<Value*>& inputs,
                                   const std::vector<Value*>& outputs,
                                   std::map<std::string, Attribute> attributes,
                                   const std::string& name) {
  if (op_type.empty()) throw Error(ErrorKind::kInvalidArgument, "a node needs an op type");
  for (Value* input : inputs) check_owned(this, input, "input");
  for (Value* output : outputs) {
    if (output == nullptr) throw Error(ErrorKind::kInvalidArgument, "node output cannot be null");
    check_owned(this, output, "output");
  }
  std::string node_name = name.empty() ? unique_name(op_type) : name;
  auto node = std::unique_ptr<Node>(new Node(this, node_name, op_type));
  Node* raw = node.get();
  register_node_name(raw);
  raw->sequence_ = next_sequence_++;
  nodes_.emplace(raw->sequence_, std::move(node));
  raw->attributes_ = std::move(attributes);
  for (Value* input : inputs) raw->add_input(input);
  raw->outputs_.resize(outputs.size(), nullptr);
  for (size_t i = 0; i < outputs.size(); ++i) raw->set_output(i, outputs[i]);
  return raw;
}

Node* Graph::add_node(const std::string& op_type, const std::vector<Value*>& inputs,
                      size_t num_outputs, std::map<std::string, Attribute> attributes,
                      const std::string& name) {
  std::string node_name = name.empty() ? unique_name(op_type) : name;
  if (node_by_name_.count(node_name) != 0) {
    throw Error(ErrorKind::kInvalidGraph, "graph '" + name_ + "' already has a node named '" +
                                              node_name + "'");
  }
  std::vector<Value*> outputs;
  outputs.reserve(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) {
    std::string output_name = node_name + ":" + std::to_string(i);
    if (value_by_name_.count(output_name) != 0) output_name = unique_name(output_name);
    outputs.push_back(add_value(output_name));
  }
  return add_node_with_outputs(op_type, inputs, outputs, std::move(attributes), node_name);
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> list;
  list.reserve(nodes_.size());
  for (const auto& [sequence, node] : nodes_) list.push_back(node.get());
  return list;
}

// --- Graph: shared utilities ---------------------------------------------------

std::vector<Node*> Graph::topological_order() const {
  // Kahn's algorithm; the ready set is a min-heap on insertion order so the
  // result is deterministic and close to the order nodes were added in.
  auto later = [](const Node* a, const Node* b) { return a->sequence_ > b->sequence_; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  std::unordered_map<const Node*, size_t> pending;
  for (const auto& [sequence, node] : nodes_) {
    size_t count = node->control_inputs_.size();
    for (const Value* input : node->inputs_) {
      if (input != nullptr && input->producer_ != nullptr) ++count;
    }
    pending[node.get()] = count;
    if (count == 0) ready.push(node.get());
  }
  std::vector<Node*> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    order.push_back(node);
    auto release = [&](Node* successor) {
      if (--pending[successor] == 0) ready.push(successor);
    };
    for (const Value* output : node->outputs_) {
      if (output->producer_ != node) continue;  // a second producer; counted for the other one
      for (const Use& use : output->uses_) release(use.node);
    }
    for (Node* successor : node->control_outputs_) release(successor);
  }
  if (order.size() == nodes_.size()) return order;

  // Walk back from any blocked node along blocked predecessors until a node
  // repeats: that stretch is a cycle, which the error spells out.
  const Node* start = nullptr;
  for (const auto& [sequence, node] : nodes_) {
    if (pending[node.get()] != 0) {
      start = node.get();
      break;
    }
  }
  std::vector<const Node*> path;
  std::unordered_map<const Node*, size_t> position;
  const Node* current = start;
  while (position.count(current) == 0) {
    position[current] = path.size();
    path.push_back(current);
    const Node* next = nullptr;
    for (const Value* input : current->inputs_) {
      if (input != nullptr && input->producer_ != nullptr && pending[input->producer_] != 0) {
        next = input->producer_;
        break;
      }
    }
    if (next == nullptr) {
      for (const Node* control : current->control_inputs_) {
        if (pending[control] != 0) {
          next = control;
          break;
        }
      }
    }
    current = next;
  }
  // path[k + 1] feeds path[k]; print in data-flow order, closing the loop.
  std::string cycle = current->name_;
  for (size_t i = path.size() - 1; i > position[current]; --i) cycle += " -> " + path[i]->name_;
  cycle += " -> " + current->name_;
  throw Error(ErrorKind::kInvalidGraph, "graph '" + name_ + "' has a cycle: " + cycle)
      .with_node(current->name_);
}

void Graph::replace_all_uses(Value* from, Value* to) {
  check_owned(this, from, "value");
  check_owned(this, to, "value");
  if (from == to) return;
  std::vector<Use> uses = from->uses_;  // set_input edits from->uses_
  for (const Use& use : uses) use.node->set_input(static_cast<size_t>(use.input_index), to);
  for (Value*& output : outputs_) {
    if (output == from) output = to;
  }
}

void Graph::remove_node(Node* node) {
  if (node == nullptr || node->graph_ != this) {
    throw Error(ErrorKind::kInvalidArgument, "remove_node: node is not in graph '" + name_ + "'");
  }
  for (Value* output : node->outputs_) {
    if (output->producer_ != node) continue;
    if (!output->uses_.empty() ||
        std::find(outputs_.begin(), outputs_.end(), output) != outputs_.end()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "cannot remove the node while its output '" + output->name() +
                      "' is still used; replace its uses first").with_node(node->name_);
    }
  }
  for (size_t i = 0; i < node->inputs_.size(); ++i) {
    if (node->inputs_[i] != nullptr) erase_use(node->inputs_[i]->uses_, {node, static_cast<int>(i)});
  }
  for (Node* control : std::vector<Node*>(node->control_inputs_)) node->remove_control_input(control);
  for (Node* dependent : std::vector<Node*>(node->control_outputs_)) dependent->remove_control_input(node);
  for (Value* output : node->outputs_) {
    if (output->producer_ != node) continue;
    output->producer_ = nullptr;
    value_by_name_.erase(output->name());
    values_.erase(output);
  }
  node_by_name_.erase(node->name_);
  nodes_.erase(node->sequence_);
}

namespace {

// Copies nodes from one graph into another, mapping values by identity.
class GraphCopier {
 public:
  explicit GraphCopier(Graph& target) : target_(target) {}

  void map(const Value* from, Value* to) { values_[from] = to; }

  Value* copy_value(const Value* value) {
    if (value == nullptr) return nullptr;
    auto it = values_.find(value);
    if (it != values_.end()) return it->second;
    Value* copy = nullptr;
    switch (value->kind()) {
      case ValueKind::kInput: copy = target_.add_input(value->name(), value->type()); break;
      case ValueKind::kConstant: copy = target_.add_constant(value->name(), value->data()); break;
      case ValueKind::kPersistent:
        copy = target_.add_persistent(value->name(), value->type(), value->role(), value->data());
        break;
      case ValueKind::kIntermediate: copy = target_.add_value(value->name(), value->type()); break;
    }
    values_[value] = copy;
    return copy;
  }

  Node* copy_node(const Node* node) {
    std::vector<Value*> inputs;
    for (const Value* input : node->inputs()) inputs.push_back(copy_value(input));
    std::vector<Value*> outputs;
    for (const Value* output : node->outputs()) {
      // An output already mapped means the source had two producers for it;
      // copy the second one faithfully so the verifier sees the same graph.
      auto it = values_.find(output);
      outputs.push_back(it != values_.end() ? it->second : copy_value(output));
    }
    std::map<std::string, Attribute> attributes;
    for (const auto& [name, attribute] : node->attributes()) attributes.emplace(name, attribute.deep_copy());
    Node* copy = target_.add_node_with_outputs(node->op_type(), inputs, outputs, std::move(attributes),
                                               node->name());
    copy->set_domain(node->domain());
    copy->set_device(node->device());
    copy->set_stream(node->stream());
    nodes_[node] = copy;
    return copy;
  }

  Node* mapped(const Node* node) const {
    auto it = nodes_.find(node);
    return it == nodes_.end() ? nullptr : it->second;
  }

 private:
  Graph& target_;
  std::unordered_map<const Value*, Value*> values_;
  std::unordered_map<const Node*, Node*> nodes_;
};

void copy_control_edges(const std::vector<Node*>& sources, const GraphCopier& copier) {
  for (const Node* node : sources) {
    Node* copy = copier.mapped(node);
    if (copy == nullptr) continue;
    for (const Node* control : node->control_inputs()) {
      if (Node* control_copy = copier.mapped(control)) copy->add_control_input(control_copy);
    }
  }
}

}  // namespace

std::unique_ptr<Graph> Graph::clone() const {
  auto copy = std::make_unique<Graph>(name_);
  GraphCopier copier(*copy);
  // Declaration order is kept so that a clone serializes like its source.
  for (const Value* value : inputs_) copier.copy_value(value);
  for (const Value* value : constants_) copier.copy_value(value);
  for (const Value* value : persistents_) copier.copy_value(value);
  std::vector<Node*> source_nodes = nodes();
  for (const Node* node : source_nodes) copier.copy_node(node);
  copy_control_edges(source_nodes, copier);
  for (const Value* output : outputs_) copy->add_output(copier.copy_value(output));
  copy->next_name_id_ = next_name_id_;
  return copy;
}

std::unique_ptr<Graph> Graph::extract_subgraph(const std::vector<Value*>& inputs,
                                               const std::vector<Value*>& outputs) const {
  std::unordered_set<const Value*> boundary(inputs.begin(), inputs.end());
  std::unordered_set<const Node*> needed;
  std::unordered_set<const Value*> needed_values;
  std::vector<const Value*> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    const Value* value = stack.back();
    stack.pop_back();
    if (value == nullptr || boundary.count(value) != 0 || !needed_values.insert(value).second) continue;
    check_owned(this, value, "value");
    if (value->is_constant() || value->is_persistent()) continue;
    const Node* producer = value->producer();
    if (producer == nullptr) {
      throw Error(ErrorKind::kInvalidArgument,
                  "cannot extract a subgraph of '" + name_ + "': value '" + value->name() +
                      "' is needed but is not among the subgraph's inputs");
    }
    if (needed.insert(producer).second) {
      for (const Value* input : producer->inputs()) stack.push_back(input);
    }
  }

  auto sub = std::make_unique<Graph>(name_ + "_sub");
  GraphCopier copier(*sub);
  for (const Value* input : inputs) {
    check_owned(this, input, "input");
    copier.map(input, sub->add_input(input->name(), input->type()));
  }
  for (const Value* value : constants_) {
    if (needed_values.count(value) != 0) copier.copy_value(value);
  }
  for (const Value* value : persistents_) {
    if (needed_values.count(value) != 0) copier.copy_value(value);
  }
  std::vector<Node*> source_nodes;
  for (Node* node : topological_order()) {
    if (needed.count(node) != 0) source_nodes.push_back(node);
  }
  for (const Node* node : source_nodes) copier.copy_node(node);
  copy_control_edges(source_nodes, copier);
  for (const Value* output : outputs) sub->add_output(copier.copy_value(output));
  return sub;
}

}  // namespace weir
