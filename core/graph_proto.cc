#include "core/graph_proto.h"

#include <unordered_map>

#include "core/allocation_limits.h"
#include "core/error.h"

namespace weir {

namespace {

// --- writing -------------------------------------------------------------------

void type_to_proto(const TensorType& type, proto::TensorType* message) {
  message->set_dtype(static_cast<int32_t>(type.dtype));
  message->set_sequence(type.sequence);
  message->set_optional(type.optional);
  proto::Shape* shape = message->mutable_shape();
  if (!type.shape.has_rank()) {
    shape->set_unknown_rank(true);
    return;
  }
  for (const Dim& dim : type.shape.dims()) {
    proto::Dimension* out = shape->add_dim();
    if (dim.is_symbolic()) {
      out->set_symbol(dim.symbol_name());
    } else {
      out->set_size(dim.size());
    }
  }
}

void value_info_to_proto(const Value& value, proto::ValueInfo* message) {
  message->set_name(value.name());
  type_to_proto(value.type(), message->mutable_type());
}

proto::PersistentRole role_to_proto(PersistentRole role) {
  switch (role) {
    case PersistentRole::kParameter: return proto::PARAMETER;
    case PersistentRole::kOptimizerState: return proto::OPTIMIZER_STATE;
    case PersistentRole::kBuffer: return proto::BUFFER;
  }
  return proto::PARAMETER;
}

void attribute_to_proto(const std::string& name, const Attribute& attribute,
                        proto::Attribute* message, ExternalDataWriter* external) {
  message->set_name(name);
  message->set_type(static_cast<proto::AttributeType>(attribute.type()));
  switch (attribute.type()) {
    case AttrType::kInt: message->set_i(attribute.i()); break;
    case AttrType::kFloat: message->set_f(attribute.f()); break;
    case AttrType::kString: message->set_s(attribute.s()); break;
    case AttrType::kTensor: tensor_to_proto(attribute.t(), message->mutable_t(), external); break;
    case AttrType::kGraph: graph_to_proto(*attribute.g(), message->mutable_g(), external); break;
    case AttrType::kInts:
      for (int64_t value : attribute.ints()) message->add_ints(value);
      break;
    case AttrType::kFloats:
      for (double value : attribute.floats()) message->add_floats(value);
      break;
    case AttrType::kStrings:
      for (const std::string& value : attribute.strings()) message->add_strings(value);
      break;
    case AttrType::kTensors:
      for (const Tensor& value : attribute.tensors()) tensor_to_proto(value, message->add_tensors(), external);
      break;
    case AttrType::kGraphs:
      for (const GraphPtr& value : attribute.graphs()) graph_to_proto(*value, message->add_graphs(), external);
      break;
  }
}

// --- reading --------------------------------------------------------------------

TensorType type_from_proto(const proto::TensorType& message, const std::string& what) {
  TensorType type;
  if (message.dtype() != 0 && !is_valid_dtype(message.dtype())) {
    throw Error(ErrorKind::kFormat, what + " has unknown dtype code " + std::to_string(message.dtype()));
  }
  type.dtype = static_cast<DType>(message.dtype());
  type.sequence = message.sequence();
  type.optional = message.optional();
  const proto::Shape& shape = message.shape();
  if (shape.unknown_rank()) {
    if (shape.dim_size() != 0) {
      throw Error(ErrorKind::kFormat, what + " has unknown rank but lists dimensions");
    }
    return type;
  }
  std::vector<Dim> dims;
  std::vector<int64_t> static_sizes;
  for (const proto::Dimension& dim : shape.dim()) {
    switch (dim.value_case()) {
      case proto::Dimension::kSize:
        if (dim.size() < 0) {
          throw Error(ErrorKind::kFormat, what + " has negative dimension " + std::to_string(dim.size()));
        }
        dims.emplace_back(dim.size());
        static_sizes.push_back(dim.size());
        break;
      case proto::Dimension::kSymbol:
        if (dim.symbol().empty()) throw Error(ErrorKind::kFormat, what + " has a symbolic dimension with no name");
        dims.push_back(Dim::symbol(dim.symbol()));
        break;
      case proto::Dimension::VALUE_NOT_SET:
        throw Error(ErrorKind::kFormat, what + " has a dimension with neither a size nor a symbol");
    }
  }
  if (!checked_num_elements(static_sizes)) {
    throw Error(ErrorKind::kFormat, what + " has a shape whose element count overflows 64 bits");
  }
  type.shape = Shape(std::move(dims));
  return type;
}

PersistentRole role_from_proto(int role, const std::string& what) {
  switch (role) {
    case proto::PARAMETER: return PersistentRole::kParameter;
    case proto::OPTIMIZER_STATE: return PersistentRole::kOptimizerState;
    case proto::BUFFER: return PersistentRole::kBuffer;
    default:
      throw Error(ErrorKind::kFormat, what + " has unknown persistent role " + std::to_string(role));
  }
}

Attribute attribute_from_proto(const proto::Attribute& message, ExternalDataReader* external,
                               const std::string& node_name) {
  std::string what = "attribute '" + message.name() + "'";
  switch (message.type()) {
    case proto::INT: return Attribute(message.i());
    case proto::FLOAT: return Attribute(message.f());
    case proto::STRING: return Attribute(message.s());
    case proto::TENSOR: return Attribute(tensor_from_proto(message.t(), external, what));
    case proto::GRAPH: return Attribute(GraphPtr(graph_from_proto(message.g(), external)));
    case proto::INTS: return Attribute(std::vector<int64_t>(message.ints().begin(), message.ints().end()));
    case proto::FLOATS: return Attribute(std::vector<double>(message.floats().begin(), message.floats().end()));
    case proto::STRINGS:
      return Attribute(std::vector<std::string>(message.strings().begin(), message.strings().end()));
    case proto::TENSORS: {
      std::vector<Tensor> tensors;
      for (const proto::Tensor& tensor : message.tensors()) tensors.push_back(tensor_from_proto(tensor, external, what));
      return Attribute(std::move(tensors));
    }
    case proto::GRAPHS: {
      std::vector<GraphPtr> graphs;
      for (const proto::Graph& graph : message.graphs()) graphs.emplace_back(graph_from_proto(graph, external));
      return Attribute(std::move(graphs));
    }
    default:
      throw Error(ErrorKind::kFormat, what + " has unknown type code " + std::to_string(message.type()))
          .with_node(node_name);
  }
}

// Builds a Graph from its message, checking every name reference.
class GraphReader {
 public:
  GraphReader(const proto::Graph& message, ExternalDataReader* external)
      : message_(message), external_(external), graph_(std::make_unique<Graph>(message.name())) {}

  std::unique_ptr<Graph> read() {
    for (const proto::ValueInfo& input : message_.input()) {
      check_fresh_name(input.name(), "graph input");
      graph_->add_input(input.name(), type_from_proto(input.type(), "graph input '" + input.name() + "'"));
    }
    for (const proto::Constant& constant : message_.constant()) {
      std::string what = "constant '" + constant.name() + "'";
      check_fresh_name(constant.name(), "constant");
      if (!constant.has_tensor()) throw Error(ErrorKind::kFormat, what + " has no tensor");
      graph_->add_constant(constant.name(), tensor_from_proto(constant.tensor(), external_, what));
    }
    for (const proto::Persistent& persistent : message_.persistent()) {
      const std::string& name = persistent.info().name();
      std::string what = "persistent value '" + name + "'";
      check_fresh_name(name, "persistent value");
      Tensor initial;
      if (persistent.has_initial()) initial = tensor_from_proto(persistent.initial(), external_, what);
      graph_->add_persistent(name, type_from_proto(persistent.info().type(), what),
                             role_from_proto(persistent.role(), what), std::move(initial));
    }
    read_value_infos();
    std::vector<Node*> nodes;
    for (const proto::Node& node : message_.node()) nodes.push_back(create_node(node));
    for (int i = 0; i < message_.node_size(); ++i) connect_node(message_.node(i), nodes[static_cast<size_t>(i)]);
    for (const std::string& name : message_.output()) {
      Value* value = graph_->find_value(name);
      if (value == nullptr) {
        throw Error(ErrorKind::kFormat, "graph '" + graph_->name() + "' output '" + name +
                                            "' is not produced by any node nor declared as an input, "
                                            "constant or persistent value");
      }
      graph_->add_output(value);
    }
    return std::move(graph_);
  }

 private:
  void check_fresh_name(const std::string& name, const std::string& what) const {
    if (name.empty()) throw Error(ErrorKind::kFormat, "a " + what + " of graph '" + graph_->name() + "' has no name");
    if (graph_->find_value(name) != nullptr) {
      throw Error(ErrorKind::kFormat, what + " '" + name + "' of graph '" + graph_->name() +
                                          "' reuses the name of another value");
    }
  }

  void read_value_infos() {
    for (const proto::ValueInfo& info : message_.value_info()) {
      std::string what = "value_info '" + info.name() + "'";
      if (!value_types_.emplace(info.name(), type_from_proto(info.type(), what)).second) {
        throw Error(ErrorKind::kFormat, what + " appears twice in graph '" + graph_->name() + "'");
      }
    }
  }

  Node* create_node(const proto::Node& message) {
    const std::string& node_name = message.name();
    if (message.op_type().empty()) {
      throw Error(ErrorKind::kFormat, "node has no op type").with_node(node_name);
    }
    if (!node_name.empty() && graph_->find_node(node_name) != nullptr) {
      throw Error(ErrorKind::kFormat, "two nodes are named '" + node_name + "'").with_node(node_name);
    }
    std::vector<Value*> outputs;
    for (const std::string& output_name : message.output()) {
      if (output_name.empty()) throw Error(ErrorKind::kFormat, "an output has no name").with_node(node_name);
      if (Value* existing = graph_->find_value(output_name)) {
        std::string owner = existing->producer() != nullptr
                                ? "node '" + existing->producer()->name() + "'"
                                : "a graph " + std::string(value_kind_name(existing->kind())) + " value";
        throw Error(ErrorKind::kFormat, "output '" + output_name + "' is also produced by " + owner +
                                            "; a value has one producer").with_node(node_name);
      }
      auto type = value_types_.find(output_name);
      outputs.push_back(graph_->add_value(output_name, type == value_types_.end() ? TensorType() : type->second));
    }
    std::map<std::string, Attribute> attributes;
    for (const proto::Attribute& attribute : message.attribute()) {
      if (attribute.name().empty()) throw Error(ErrorKind::kFormat, "an attribute has no name").with_node(node_name);
      try {
        if (!attributes.emplace(attribute.name(), attribute_from_proto(attribute, external_, node_name)).second) {
          throw Error(ErrorKind::kFormat, "attribute '" + attribute.name() + "' appears twice");
        }
      } catch (Error& e) {
        e.with_node(node_name);
        throw;
      }
    }
    Node* node = graph_->add_node_with_outputs(message.op_type(), {}, outputs, std::move(attributes), node_name);
    node->set_domain(message.domain());
    if (!message.device().empty()) {
      try {
        node->set_device(Device::parse(message.device()));
      } catch (Error& e) {
        throw Error(ErrorKind::kFormat, e.message()).with_node(node->name());
      }
    }
    node->set_stream(message.stream());
    return node;
  }

  void connect_node(const proto::Node& message, Node* node) {
    for (int i = 0; i < message.input_size(); ++i) {
      const std::string& input_name = message.input(i);
      if (input_name.empty()) {
        node->add_input(nullptr);  // absent optional input
        continue;
      }
      Value* value = graph_->find_value(input_name);
      if (value == nullptr) {
        throw Error(ErrorKind::kFormat, "input " + std::to_string(i) + " '" + input_name +
                                            "' is not produced by any node nor declared as a graph "
                                            "input, constant or persistent value").with_node(node->name());
      }
      node->add_input(value);
    }
    for (const std::string& control_name : message.control_input()) {
      Node* control = graph_->find_node(control_name);
      if (control == nullptr) {
        throw Error(ErrorKind::kFormat, "control input '" + control_name + "' names no node of graph '" +
                                            graph_->name() + "'").with_node(node->name());
      }
      node->add_control_input(control);
    }
  }

  const proto::Graph& message_;
  ExternalDataReader* external_;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, TensorType> value_types_;
};

}  // namespace

void tensor_to_proto(const Tensor& tensor, proto::Tensor* message, ExternalDataWriter* external) {
  if (tensor.device().type != DeviceType::kCpu) {
    throw Error(ErrorKind::kUnsupported, "only host tensors can be serialized; copy to cpu first");
  }
  message->set_dtype(static_cast<int32_t>(tensor.dtype()));
  for (int64_t size : tensor.sizes()) message->add_dims(size);
  if (external != nullptr && external->append(tensor, message->mutable_external())) return;
  message->clear_external();
  if (tensor.nbytes() > 0) message->set_raw_data(tensor.raw_data(), tensor.nbytes());
}

void graph_to_proto(const Graph& graph, proto::Graph* message, ExternalDataWriter* external) {
  message->set_name(graph.name());
  for (const Value* input : graph.inputs()) value_info_to_proto(*input, message->add_input());
  for (const Value* output : graph.outputs()) message->add_output(output->name());
  for (const Value* constant : graph.constants()) {
    proto::Constant* out = message->add_constant();
    out->set_name(constant->name());
    tensor_to_proto(constant->data(), out->mutable_tensor(), external);
  }
  for (const Value* persistent : graph.persistents()) {
    proto::Persistent* out = message->add_persistent();
    value_info_to_proto(*persistent, out->mutable_info());
    out->set_role(role_to_proto(persistent->role()));
    if (persistent->data().defined()) tensor_to_proto(persistent->data(), out->mutable_initial(), external);
  }
  for (const Node* node : graph.nodes()) {
    proto::Node* out = message->add_node();
    out->set_name(node->name());
    out->set_op_type(node->op_type());
    out->set_domain(node->domain());
    for (const Value* input : node->inputs()) out->add_input(input != nullptr ? input->name() : "");
    for (const Value* output : node->outputs()) {
      out->add_output(output->name());
      if (output->type() != TensorType()) value_info_to_proto(*output, message->add_value_info());
    }
    for (const auto& [name, attribute] : node->attributes()) {
      attribute_to_proto(name, attribute, out->add_attribute(), external);
    }
    for (const Node* control : node->control_inputs()) out->add_control_input(control->name());
    if (node->device()) out->set_device(node->device()->to_string());
    out->set_stream(node->stream());
  }
}

Tensor tensor_from_proto(const proto::Tensor& message, ExternalDataReader* external,
                         const std::string& what) {
  if (!is_valid_dtype(message.dtype())) {
    throw Error(ErrorKind::kFormat, what + " has unknown dtype code " + std::to_string(message.dtype()));
  }
  DType dtype = static_cast<DType>(message.dtype());
  std::vector<int64_t> sizes(message.dims().begin(), message.dims().end());
  for (int64_t size : sizes) {
    if (size < 0) throw Error(ErrorKind::kFormat, what + " has negative dimension " + std::to_string(size));
  }
  auto count = checked_num_elements(sizes);
  size_t bytes = 0;
  if (!count || __builtin_mul_overflow(static_cast<size_t>(*count), dtype_size(dtype), &bytes)) {
    throw Error(ErrorKind::kFormat, what + " has a shape whose element count overflows 64 bits");
  }
  // Every size is checked against bytes actually present before allocating,
  // so a small malicious file cannot ask for a huge buffer.
  if (message.has_external()) {
    if (!message.raw_data().empty()) {
      throw Error(ErrorKind::kFormat, what + " has both inline and external data");
    }
    if (external == nullptr) {
      throw Error(ErrorKind::kFormat, what + " refers to external data, but the model was not read from a file");
    }
    if (static_cast<uint64_t>(message.external().length()) != bytes) {
      throw Error(ErrorKind::kFormat, what + " external data holds " +
                                          std::to_string(message.external().length()) +
                                          " bytes, the tensor needs " + std::to_string(bytes));
    }
    // The file and range first, then the caps, then the allocation.
    external->check(message.external(), bytes, what);
    charge_allocation(bytes, what);
    Tensor tensor(dtype, std::move(sizes));
    external->read(message.external(), tensor.raw_data(), bytes, what);
    return tensor;
  }
  if (message.raw_data().size() != bytes) {
    throw Error(ErrorKind::kFormat, what + " holds " + std::to_string(message.raw_data().size()) +
                                        " bytes of data, its type " + std::string(dtype_name(dtype)) +
                                        Shape::from_sizes(sizes).to_string() + " needs " + std::to_string(bytes));
  }
  charge_allocation(bytes, what);
  Tensor tensor(dtype, std::move(sizes));
  if (bytes > 0) std::memcpy(tensor.raw_data(), message.raw_data().data(), bytes);
  return tensor;
}

std::unique_ptr<Graph> graph_from_proto(const proto::Graph& message, ExternalDataReader* external) {
  return GraphReader(message, external).read();
}

}  // namespace weir
