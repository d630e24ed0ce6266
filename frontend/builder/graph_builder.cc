#include "frontend/builder/graph_builder.h"

#include "core/verifier.h"
#include "ops/gradient_util.h"
#include "ops/register_ops.h"

namespace weir {

namespace {

const TensorType& undefined_type() {
  static const TensorType type;
  return type;
}

}  // namespace

const TensorType& Var::type() const { return value_ != nullptr ? value_->type() : undefined_type(); }

int64_t Var::size(int64_t axis) const {
  const Shape& s = shape();
  if (!s.has_rank()) return -1;
  int64_t rank = static_cast<int64_t>(s.rank());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || !s[static_cast<size_t>(axis)].is_static()) return -1;
  return s[static_cast<size_t>(axis)].size();
}

const std::string& Var::name() const {
  static const std::string invalid = "<invalid>";
  return value_ != nullptr ? value_->name() : invalid;
}

GraphBuilder::GraphBuilder(std::string graph_name, uint64_t seed)
    : GraphBuilder(std::move(graph_name), seed, default_op_registry()) {}

GraphBuilder::GraphBuilder(std::string graph_name, uint64_t seed, const OpRegistry& registry)
    : graph_(std::make_unique<Graph>(std::move(graph_name))), registry_(&registry), rng_(seed) {}

GraphBuilder::Scope::Scope(GraphBuilder& builder, const std::string& name) : builder_(builder) {
  builder_.scopes_.push_back(name);
}

GraphBuilder::Scope::~Scope() { builder_.scopes_.pop_back(); }

std::string GraphBuilder::scoped(const std::string& name) const {
  std::string result;
  for (const std::string& s : scopes_) result += s + "/";
  return result + name;
}

void GraphBuilder::fail(ErrorKind kind, const std::string& message) {
  if (!error_) error_ = Error(kind, message);
}

Var GraphBuilder::input(const std::string& name, TensorType type) {
  if (!ok()) return {};
  try {
    return Var(this, graph_->add_input(scoped(name), std::move(type)));
  } catch (const Error& e) {
    error_ = Error(e.kind(), "input '" + scoped(name) + "': " + e.message());
    return {};
  }
}

Var GraphBuilder::constant(Tensor value, const std::string& name) {
  if (!ok()) return {};
  try {
    return Var(this, graph_->add_constant(graph_->unique_name(scoped(name.empty() ? "const" : name)), std::move(value)));
  } catch (const Error& e) {
    error_ = Error(e.kind(), "constant '" + scoped(name) + "': " + e.message());
    return {};
  }
}

Var GraphBuilder::scalar(double value, DType dtype) {
  if (!ok()) return {};
  try {
    return Var(this, scalar_constant(*graph_, dtype, value, scoped("scalar")));
  } catch (const Error& e) {
    error_ = Error(e.kind(), "scalar(" + std::to_string(value) + "): " + e.message());
    return {};
  }
}

Var GraphBuilder::ints(const std::vector<int64_t>& values) {
  return constant(Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())}), "ints");
}

Var GraphBuilder::parameter(const std::string& name, Tensor initial) {
  if (!ok()) return {};
  try {
    TensorType type{initial.dtype(), initial.shape()};
    return Var(this, graph_->add_persistent(scoped(name), type, PersistentRole::kParameter, std::move(initial)));
  } catch (const Error& e) {
    error_ = Error(e.kind(), "parameter '" + scoped(name) + "': " + e.message());
    return {};
  }
}

Var GraphBuilder::parameter(const std::string& name, TensorType type) {
  if (!ok()) return {};
  if (!type.shape.has_rank() || !type.shape.is_static()) {
    fail(ErrorKind::kShape, "parameter '" + scoped(name) + "' without an initial value needs a static type, got " +
                                type.to_string());
    return {};
  }
  try {
    return Var(this, graph_->add_persistent(scoped(name), std::move(type), PersistentRole::kParameter, Tensor()));
  } catch (const Error& e) {
    error_ = Error(e.kind(), "parameter '" + scoped(name) + "': " + e.message());
    return {};
  }
}

Var GraphBuilder::state(const std::string& name, Tensor initial, PersistentRole role) {
  if (!ok()) return {};
  try {
    TensorType type{initial.dtype(), initial.shape()};
    return Var(this, graph_->add_persistent(scoped(name), type, role, std::move(initial)));
  } catch (const Error& e) {
    error_ = Error(e.kind(), "state '" + scoped(name) + "': " + e.message());
    return {};
  }
}

std::string GraphBuilder::describe_call(const std::string& op_type, const std::string& name,
                                        const std::vector<Var>& inputs) const {
  std::string text = op_type + " '" + name + "'(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) text += ", ";
    text += inputs[i].valid() ? inputs[i].name() + ": " + inputs[i].type().to_string() : "<absent>";
  }
  return text + ")";
}

std::vector<Var> GraphBuilder::op(const std::string& op_type, const std::vector<Var>& inputs, size_t num_outputs,
                                  std::map<std::string, Attribute> attributes, const std::string& name) {
  std::vector<Var> none(num_outputs);
  if (!ok()) return none;
  const OpSchema* schema = registry_->find(op_type);
  std::string node_name = graph_->unique_name(scoped(name.empty() ? op_type : name));
  if (schema == nullptr) {
    error_ = Error(ErrorKind::kUnsupported, describe_call(op_type, node_name, inputs) + ": unknown op '" + op_type + "'")
                 .with_node(node_name);
    return none;
  }
  std::vector<Value*> values;
  for (const Var& v : inputs) {
    if (v.valid() && v.builder() != this) {
      error_ = Error(ErrorKind::kInvalidArgument,
                     describe_call(op_type, node_name, inputs) + ": input '" + v.name() + "' belongs to another builder")
                   .with_node(node_name);
      return none;
    }
    values.push_back(v.value());
  }
  // Trailing absent inputs are dropped, so optional inputs may be left off.
  while (!values.empty() && values.back() == nullptr) values.pop_back();
  Node* node = nullptr;
  try {
    node = graph_->add_node(op_type, values, num_outputs, std::move(attributes), node_name);
    std::vector<TensorType> types = infer_output_types(*node, *schema);
    for (size_t i = 0; i < num_outputs; ++i) node->output(i)->set_type(types[i]);
  } catch (const Error& e) {
    error_ = Error(e.kind(), describe_call(op_type, node_name, inputs) + ": " + e.message()).with_node(node_name);
    if (node != nullptr) graph_->remove_node(node);
    return none;
  }
  std::vector<Var> outputs;
  for (Value* out : node->outputs()) outputs.emplace_back(this, out);
  return outputs;
}

Var GraphBuilder::op(const std::string& op_type, const std::vector<Var>& inputs,
                     std::map<std::string, Attribute> attributes, const std::string& name) {
  return op(op_type, inputs, 1, std::move(attributes), name).front();
}

void GraphBuilder::output(Var value) {
  if (!ok()) return;
  if (!value.valid()) {
    fail(ErrorKind::kInvalidArgument, "output(): the value is invalid");
    return;
  }
  graph_->add_output(value.value());
}

std::unique_ptr<Graph> GraphBuilder::finish() {
  if (error_) throw *error_;
  verify_graph(*graph_, *registry_);
  auto graph = std::move(graph_);
  graph_ = std::make_unique<Graph>(graph->name());
  return graph;
}

namespace {

Var binary(const char* op_type, Var a, Var b) {
  GraphBuilder* builder = a.builder() != nullptr ? a.builder() : b.builder();
  if (builder == nullptr) return {};
  return builder->op(op_type, {a, b});
}

Var scalar_like(Var a, double value) {
  if (a.builder() == nullptr) return {};
  return a.builder()->scalar(value, a.dtype() == DType::kUndefined ? DType::kFloat32 : a.dtype());
}

}  // namespace

Var operator+(Var a, Var b) { return binary("Add", a, b); }
Var operator-(Var a, Var b) { return binary("Sub", a, b); }
Var operator*(Var a, Var b) { return binary("Mul", a, b); }
Var operator/(Var a, Var b) { return binary("Div", a, b); }
Var operator*(Var a, double b) { return binary("Mul", a, scalar_like(a, b)); }
Var operator+(Var a, double b) { return binary("Add", a, scalar_like(a, b)); }

}  // namespace weir
