#include "core/op_schema.h"

#include <limits>

#include "core/error.h"
#include "core/graph.h"

namespace weir {

// --- InferenceContext ----------------------------------------------------------

InferenceContext::InferenceContext(const Node& node, const OpSchema& schema)
    : node_(node), schema_(schema), outputs_(node.num_outputs()) {}

size_t InferenceContext::num_inputs() const { return node_.num_inputs(); }

const TensorType* InferenceContext::input_type(size_t index) const {
  if (index >= node_.num_inputs() || node_.input(index) == nullptr) return nullptr;
  return &node_.input(index)->type();
}

const Tensor* InferenceContext::input_constant(size_t index) const {
  if (index >= node_.num_inputs() || node_.input(index) == nullptr) return nullptr;
  const Value* value = node_.input(index);
  return value->is_constant() ? &value->data() : nullptr;
}

bool InferenceContext::has_attr(const std::string& name) const {
  if (node_.has_attr(name)) return true;
  const AttributeSpec* spec = schema_.find_attr(name);
  return spec != nullptr && spec->default_value.has_value();
}

const Attribute& InferenceContext::attr(const std::string& name) const {
  auto it = node_.attributes().find(name);
  if (it != node_.attributes().end()) return it->second;
  const AttributeSpec* spec = schema_.find_attr(name);
  if (spec != nullptr && spec->default_value) return *spec->default_value;
  fail("attribute '" + name + "' is required");
}

void InferenceContext::set_output_type(size_t index, TensorType type) {
  if (index >= outputs_.size()) {
    fail("inference set output " + std::to_string(index) + " but the node has " +
         std::to_string(outputs_.size()) + " outputs");
  }
  outputs_[index] = std::move(type);
}

void InferenceContext::fail(const std::string& message) const {
  throw Error(ErrorKind::kShape, node_.op_type() + ": " + message).with_node(node_.name());
}

// --- GradientContext --------------------------------------------------------------

GradientContext::GradientContext(Graph& graph, const Node& node, std::vector<Value*> output_grads)
    : graph_(graph), node_(node), output_grads_(std::move(output_grads)),
      input_grads_(node.num_inputs(), nullptr) {}

std::vector<Value*> GradientContext::emit(const std::string& op_type,
                                          const std::vector<Value*>& inputs, size_t num_outputs,
                                          std::map<std::string, Attribute> attributes) {
  Node* node = graph_.add_node(op_type, inputs, num_outputs, std::move(attributes),
                               graph_.unique_name(node_.name() + "_grad_" + op_type));
  return node->outputs();
}

void GradientContext::set_input_grad(size_t index, Value* grad) {
  if (index >= input_grads_.size()) {
    throw Error(ErrorKind::kInternal, "gradient rule set input " + std::to_string(index) +
                                          " of a node with " + std::to_string(input_grads_.size()) +
                                          " inputs").with_node(node_.name());
  }
  input_grads_[index] = grad;
}

// --- OpSchema -----------------------------------------------------------------------

OpSchema::OpSchema(std::string name, std::string domain)
    : name_(std::move(name)), domain_(std::move(domain)) {}

OpSchema& OpSchema::input(std::string name, std::string type_param, Arity arity) {
  inputs_.push_back({std::move(name), std::move(type_param), arity});
  return *this;
}

OpSchema& OpSchema::output(std::string name, std::string type_param, Arity arity) {
  outputs_.push_back({std::move(name), std::move(type_param), arity});
  return *this;
}

OpSchema& OpSchema::type_constraint(std::string type_param, std::vector<DType> allowed) {
  constraints_[std::move(type_param)] = std::move(allowed);
  return *this;
}

OpSchema& OpSchema::attr(std::string name, AttrType type, std::optional<Attribute> default_value) {
  if (default_value && default_value->type() != type) {
    throw Error(ErrorKind::kInternal, "schema " + name_ + ": default of attribute '" + name +
                                          "' is " + std::string(attr_type_name(default_value->type())) +
                                          ", declared " + std::string(attr_type_name(type)));
  }
  attributes_.push_back({std::move(name), type, false, std::move(default_value)});
  return *this;
}

OpSchema& OpSchema::required_attr(std::string name, AttrType type) {
  attributes_.push_back({std::move(name), type, true, std::nullopt});
  return *this;
}

OpSchema& OpSchema::traits(OpTrait traits) {
  traits_ = traits;
  return *this;
}

OpSchema& OpSchema::add_traits(OpTrait traits) {
  traits_ = traits_ | traits;
  return *this;
}

OpSchema& OpSchema::infer(ShapeInferenceFn fn) {
  inference_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::gradient(GradientFn fn) {
  gradient_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::inplace_input(size_t index) {
  inplace_input_ = index;
  return *this;
}

std::optional<size_t> OpSchema::inplace_input() const {
  if (inplace_input_) return inplace_input_;
  if (has(OpTrait::kElementwise) && has(OpTrait::kInplaceable)) return 0;
  return std::nullopt;
}

OpSchema& OpSchema::doc(std::string text) {
  doc_ = std::move(text);
  return *this;
}

const AttributeSpec* OpSchema::find_attr(std::string_view name) const {
  for (const AttributeSpec& spec : attributes_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

namespace {

size_t min_count(const std::vector<FormalParameter>& params) {
  // Trailing optional parameters may be left out; a variadic needs at least one.
  size_t count = params.size();
  while (count > 0 && params[count - 1].arity == Arity::kOptional) --count;
  return count;
}

size_t max_count(const std::vector<FormalParameter>& params) {
  if (!params.empty() && params.back().arity == Arity::kVariadic) {
    return std::numeric_limits<size_t>::max();
  }
  return params.size();
}

const FormalParameter& param_at(const std::vector<FormalParameter>& params, size_t index,
                                const std::string& schema_name) {
  if (index < params.size()) return params[index];
  if (!params.empty() && params.back().arity == Arity::kVariadic) return params.back();
  throw Error(ErrorKind::kInternal, "schema " + schema_name + " has no parameter " +
                                        std::to_string(index));
}

}  // namespace

size_t OpSchema::min_inputs() const { return min_count(inputs_); }
size_t OpSchema::max_inputs() const { return max_count(inputs_); }
size_t OpSchema::min_outputs() const { return min_count(outputs_); }
size_t OpSchema::max_outputs() const { return max_count(outputs_); }
const FormalParameter& OpSchema::input_param(size_t index) const { return param_at(inputs_, index, name_); }
const FormalParameter& OpSchema::output_param(size_t index) const { return param_at(outputs_, index, name_); }

// --- OpRegistry ----------------------------------------------------------------------

void OpRegistry::add(OpSchema schema) {
  auto key = std::make_pair(schema.domain(), schema.name());
  if (schemas_.count(key) != 0) {
    throw Error(ErrorKind::kInternal, "op schema '" + schema.name() + "' (domain '" +
                                          schema.domain() + "') is registered twice");
  }
  schemas_.emplace(std::move(key), std::move(schema));
}

const OpSchema* OpRegistry::find(std::string_view op_type, std::string_view domain) const {
  auto it = schemas_.find(std::make_pair(std::string(domain), std::string(op_type)));
  return it == schemas_.end() ? nullptr : &it->second;
}

const OpSchema& OpRegistry::get(std::string_view op_type, std::string_view domain) const {
  const OpSchema* schema = find(op_type, domain);
  if (schema == nullptr) {
    throw Error(ErrorKind::kUnsupported, "unknown op type '" + std::string(op_type) + "'" +
                                             (domain.empty() ? "" : " in domain '" + std::string(domain) + "'"));
  }
  return *schema;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> list;
  for (const auto& [key, schema] : schemas_) list.push_back(key.second);
  return list;
}

std::vector<TensorType> infer_output_types(const Node& node, const OpSchema& schema) {
  InferenceContext context(node, schema);
  if (schema.inference()) schema.inference()(context);
  return context.output_types();
}

}  // namespace weir
