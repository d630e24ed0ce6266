// Graph IR: a Graph owns Nodes and Values.
//
// A Value is a named tensor with a static TensorType and at most one producer.
// Its kind says where it comes from: a node's output (intermediate), a graph
// input, a constant (carries a Tensor), or a persistent value (a parameter,
// optimizer state or buffer that lives across runs; may carry its initial
// Tensor). A Node is one op application: op type, ordered inputs (nullptr for
// an absent optional input), outputs, typed attributes, control inputs (pure
// ordering edges) and an optional device/stream placement.
//
//   weir::Graph g("mlp");
//   weir::Value* x = g.add_input("x", {weir::DType::kFloat32, weir::Shape{weir::Dim::symbol("N"), 784}});
//   weir::Value* w = g.add_persistent("w", {weir::DType::kFloat32, weir::Shape{784, 10}},
//                                     weir::PersistentRole::kParameter);
//   weir::Node* mm = g.add_node("MatMul", {x, w});          // one output, named automatically
//   weir::Node* relu = g.add_node("Relu", {mm->output(0)}, /*num_outputs=*/1, {}, "relu1");
//   g.add_output(relu->output(0));
//   for (weir::Node* n : g.topological_order()) { ... }
//
// Mutation keeps use lists consistent (set_input, replace_all_uses,
// remove_node). What it does not check is whether the result is valid: a pass
// can make a dangling input, a cycle or a second producer, and the verifier
// (core/verifier.h) is what finds them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/attribute.h"
#include "core/device.h"
#include "core/tensor.h"
#include "core/tensor_type.h"

namespace weir {

class Graph;
class Node;

enum class ValueKind { kIntermediate, kInput, kConstant, kPersistent };
enum class PersistentRole { kParameter, kOptimizerState, kBuffer };

std::string_view value_kind_name(ValueKind kind);
std::string_view persistent_role_name(PersistentRole role);

struct Use {
  Node* node;
  int input_index;
  bool operator==(const Use& other) const = default;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  void set_type(TensorType type) { type_ = std::move(type); }

  ValueKind kind() const { return kind_; }
  bool is_constant() const { return kind_ == ValueKind::kConstant; }
  bool is_persistent() const { return kind_ == ValueKind::kPersistent; }
  PersistentRole role() const { return role_; }  // meaningful for persistent values only

  // The constant's tensor, or a persistent value's initial tensor (may be undefined).
  const Tensor& data() const { return data_; }
  void set_data(Tensor data) { data_ = std::move(data); }

  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }
  Graph* graph() const { return graph_; }

 private:
  friend class Graph;
  friend class Node;
  Value(Graph* graph, std::string name, TensorType type, ValueKind kind)
      : graph_(graph), name_(std::move(name)), type_(std::move(type)), kind_(kind) {}

  Graph* graph_;
  std::string name_;
  TensorType type_;
  ValueKind kind_;
  PersistentRole role_ = PersistentRole::kParameter;
  Tensor data_;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Use> uses_;
};

class Node {
 public:
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }  // "" for Weir's own ops
  void set_domain(std::string domain) { domain_ = std::move(domain); }
  Graph* graph() const { return graph_; }

  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t index) const { return inputs_.at(index); }
  size_t num_inputs() const { return inputs_.size(); }
  // Rebinds input `index` (nullptr: absent optional input); keeps use lists right.
  void set_input(size_t index, Value* value);
  void add_input(Value* value);
  void remove_input(size_t index);

  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* output(size_t index) const { return outputs_.at(index); }
  size_t num_outputs() const { return outputs_.size(); }
  // Makes `value` (a value of this graph) output `index` of this node. The old
  // output loses its producer. If `value` already had a producer, that node
  // still lists it: a graph with two producers, which the verifier rejects.
  void set_output(size_t index, Value* value);

  const std::map<std::string, Attribute>& attributes() const { return attributes_; }
  bool has_attr(const std::string& name) const { return attributes_.count(name) != 0; }
  const Attribute& attr(const std::string& name) const;  // throws when missing, naming the node
  void set_attr(const std::string& name, Attribute value) { attributes_[name] = std::move(value); }
  void remove_attr(const std::string& name) { attributes_.erase(name); }

  // Nodes that must finish before this one starts, without a data edge.
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }
  const std::vector<Node*>& control_outputs() const { return control_outputs_; }
  void add_control_input(Node* node);
  void remove_control_input(Node* node);

  const std::optional<Device>& device() const { return device_; }
  void set_device(std::optional<Device> device) { device_ = device; }
  // Stream name on the device ("" = the device's default compute stream).
  const std::string& stream() const { return stream_; }
  void set_stream(std::string stream) { stream_ = std::move(stream); }

 private:
  friend class Graph;
  Node(Graph* graph, std::string name, std::string op_type)
      : graph_(graph), name_(std::move(name)), op_type_(std::move(op_type)) {}

  Graph* graph_;
  std::string name_;
  std::string op_type_;
  std::string domain_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Attribute> attributes_;  // ordered: serialization is deterministic
  std::vector<Node*> control_inputs_;
  std::vector<Node*> control_outputs_;
  std::optional<Device> device_;
  std::string stream_;
  uint64_t sequence_ = 0;  // insertion order; orders nodes() and breaks topological ties
};

class Graph {
 public:
  explicit Graph(std::string name = "graph");
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // --- values -------------------------------------------------------------
  // Each name must be unique in the graph; "" picks a fresh one.
  Value* add_input(const std::string& name, TensorType type);
  Value* add_constant(const std::string& name, Tensor tensor);
  Value* add_persistent(const std::string& name, TensorType type, PersistentRole role,
                        Tensor initial = Tensor());
  // An intermediate value with no producer yet, for Node::set_output.
  Value* add_value(const std::string& name, TensorType type = TensorType());
  // Removes a value no node uses or produces and no graph output names.
  void remove_value(Value* value);
  // Gives `value` a new name, unique in the graph (throws otherwise): a
  // rewrite that puts a new value in an old one's place keeps the name.
  void rename_value(Value* value, const std::string& name);

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& constants() const { return constants_; }
  const std::vector<Value*>& persistents() const { return persistents_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  void add_output(Value* value);
  void set_output(size_t index, Value* value);
  void clear_outputs() { outputs_.clear(); }

  Value* find_value(const std::string& name) const;
  Node* find_node(const std::string& name) const;
  size_t num_values() const { return value_by_name_.size(); }
  size_t num_nodes() const { return nodes_.size(); }

  // --- nodes --------------------------------------------------------------
  // Adds a node with `num_outputs` fresh outputs of unknown type, named
  // "<node name>:<i>". An empty node name picks "<op_type>_<n>".
  Node* add_node(const std::string& op_type, const std::vector<Value*>& inputs,
                 size_t num_outputs = 1, std::map<std::string, Attribute> attributes = {},
                 const std::string& name = "");
  // Adds a node whose outputs are the given values (created by add_value).
  Node* add_node_with_outputs(const std::string& op_type, const std::vector<Value*>& inputs,
                              const std::vector<Value*>& outputs,
                              std::map<std::string, Attribute> attributes = {},
                              const std::string& name = "");
  // Nodes in the order they were added (the serialization order).
  std::vector<Node*> nodes() const;

  // --- utilities every pass shares --------------------------------------
  // Data and control edges respected; ties broken by insertion order, so the
  // result is deterministic. Throws weir::Error(kInvalidGraph) naming a node
  // on the cycle when there is one.
  std::vector<Node*> topological_order() const;
  // Every use of `from` (node inputs and graph outputs) now reads `to`.
  void replace_all_uses(Value* from, Value* to);
  // Removes a node and its outputs. Its outputs must have no uses left and
  // not be graph outputs (call replace_all_uses first). Control edges to and
  // from it are dropped.
  void remove_node(Node* node);
  // Deep copy: same names, order, attributes and placement; tensors are
  // shared (they are immutable values), sub-graphs are cloned.
  std::unique_ptr<Graph> clone() const;
  // A new graph computing `outputs` from `inputs`: the nodes between them,
  // plus the constants and persistent values they read. Throws naming the
  // value when an output depends on something outside `inputs`.
  std::unique_ptr<Graph> extract_subgraph(const std::vector<Value*>& inputs,
                                          const std::vector<Value*>& outputs) const;

  // A name not yet used by any value or node, starting with `prefix`.
  std::string unique_name(const std::string& prefix);

 private:
  friend class Node;
  Value* create_value(const std::string& name, TensorType type, ValueKind kind);
  void register_node_name(Node* node);

  std::string name_;
  std::map<uint64_t, std::unique_ptr<Node>> nodes_;  // keyed by Node::sequence_
  std::unordered_map<const Value*, std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  std::vector<Value*> constants_;
  std::vector<Value*> persistents_;
  std::vector<Value*> outputs_;
  std::unordered_map<std::string, Value*> value_by_name_;
  std::unordered_map<std::string, Node*> node_by_name_;
  uint64_t next_name_id_ = 0;
  uint64_t next_sequence_ = 0;
};

}  // namespace weir
