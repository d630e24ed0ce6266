#include "frontend/onnx/onnx_exporter.h"

#include <map>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "onnx/defs/schema.h"

namespace weir {
namespace {

// Weir keeps these ops' axes as an attribute; ONNX 13+ takes them as input 1.
const std::set<std::string>& axes_as_input_ops() {
  static const std::set<std::string> ops = {"Squeeze", "Unsqueeze", "ReduceSum"};
  return ops;
}

void write_type(const TensorType& type, onnx::TypeProto* proto) {
  onnx::TypeProto::Tensor* tensor = proto->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(type.dtype));
  if (!type.shape.has_rank()) return;
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (const Dim& dim : type.shape.dims()) {
    if (dim.is_static()) shape->add_dim()->set_dim_value(dim.size());
    else shape->add_dim()->set_dim_param(dim.symbol_name());
  }
}

void write_value_info(const Value* value, onnx::ValueInfoProto* info) {
  info->set_name(value->name());
  if (value->dtype() != DType::kUndefined) write_type(value->type(), info->mutable_type());
}

// One attribute, or "" on success / the reason it has no ONNX form.
std::string write_attribute(const std::string& name, const Attribute& value, onnx::AttributeProto* proto) {
  proto->set_name(name);
  switch (value.type()) {
    case AttrType::kInt:
      proto->set_type(onnx::AttributeProto::INT);
      proto->set_i(value.i());
      return "";
    case AttrType::kFloat:
      proto->set_type(onnx::AttributeProto::FLOAT);
      proto->set_f(static_cast<float>(value.f()));
      return "";
    case AttrType::kString:
      proto->set_type(onnx::AttributeProto::STRING);
      proto->set_s(value.s());
      return "";
    case AttrType::kTensor:
      proto->set_type(onnx::AttributeProto::TENSOR);
      *proto->mutable_t() = tensor_to_onnx(value.t(), "");
      return "";
    case AttrType::kInts:
      proto->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : value.ints()) proto->add_ints(v);
      return "";
    case AttrType::kFloats:
      proto->set_type(onnx::AttributeProto::FLOATS);
      for (double v : value.floats()) proto->add_floats(static_cast<float>(v));
      return "";
    case AttrType::kStrings:
      proto->set_type(onnx::AttributeProto::STRINGS);
      for (const std::string& v : value.strings()) proto->add_strings(v);
      return "";
    case AttrType::kTensors:
      proto->set_type(onnx::AttributeProto::TENSORS);
      for (const Tensor& t : value.tensors()) *proto->add_tensors() = tensor_to_onnx(t, "");
      return "";
    case AttrType::kGraph:
    case AttrType::kGraphs:
      return "graph attribute '" + name + "' is not exported";
  }
  return "attribute '" + name + "' has an unknown type";
}

// Gelu has no ONNX op before opset 20: written out as the graph exporters
// from PyTorch write at opset 17, which the importer's gelu_fusion pass (and
// other runtimes') turn back into one op: 0.5 x (1 + erf(x / sqrt 2)), or
// the tanh form. False (nothing written) for a dtype other than f32/f64.
bool write_decomposed_gelu(const Node& node, onnx::GraphProto* g) {
  const Value* x = node.input(0);
  DType dtype = x->dtype();
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) return false;
  bool tanh_form = node.has_attr("approximate") && node.attr("approximate").s() == "tanh";
  int counter = 0;
  auto constant = [&](double value) {
    std::string name = node.name() + "_c" + std::to_string(counter++);
    Tensor t = dtype == DType::kFloat32 ? Tensor::scalar(static_cast<float>(value)) : Tensor::scalar(value);
    *g->add_initializer() = tensor_to_onnx(t, name);
    return name;
  };
  auto emit = [&](const char* op, std::vector<std::string> inputs, std::string output = "") {
    onnx::NodeProto* out = g->add_node();
    if (output.empty()) output = node.name() + "_t" + std::to_string(counter++);
    out->set_name(output + "_node");
    out->set_op_type(op);
    for (const std::string& input : inputs) out->add_input(input);
    out->add_output(output);
    return output;
  };
  const std::string& in = x->name();
  std::string inner;
  if (tanh_form) {
    std::string cube = emit("Mul", {emit("Mul", {in, in}), in});
    std::string sum = emit("Add", {in, emit("Mul", {cube, constant(0.044715)})});
    inner = emit("Tanh", {emit("Mul", {sum, constant(0.7978845608028654)})});
  } else {
    inner = emit("Erf", {emit("Div", {in, constant(1.4142135623730951)})});
  }
  std::string half_x = emit("Mul", {in, constant(0.5)});
  emit("Mul", {half_x, emit("Add", {inner, constant(1.0)})}, node.output(0)->name());
  return true;
}

}  // namespace

onnx::ModelProto to_onnx_model(const Model& model) {
  if (!model.graph) throw Error(ErrorKind::kInvalidArgument, "the model has no graph");
  const Graph& graph = *model.graph;
  onnx::ModelProto proto;
  proto.set_ir_version(8);  // ONNX 1.12 writes IR 8 with opset 17
  proto.set_producer_name("weir");
  proto.set_producer_version(model.producer_version);
  onnx::OperatorSetIdProto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxExportOpset);
  for (const auto& [key, value] : model.metadata) {
    onnx::StringStringEntryProto* entry = proto.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  onnx::GraphProto* g = proto.mutable_graph();
  g->set_name(graph.name());

  for (const Value* input : graph.inputs()) write_value_info(input, g->add_input());
  for (const Value* constant : graph.constants()) *g->add_initializer() = tensor_to_onnx(constant->data(), constant->name());
  for (const Value* persistent : graph.persistents()) {
    if (!persistent->data().defined()) {
      throw Error(ErrorKind::kInvalidArgument, "persistent value '" + persistent->name() + "' has no data to export");
    }
    *g->add_initializer() = tensor_to_onnx(persistent->data(), persistent->name());
  }

  // Weir-only ops, by op type, with the nodes that use them.
  std::map<std::string, std::vector<std::string>> refused;
  std::set<const Value*> graph_values(graph.outputs().begin(), graph.outputs().end());
  for (const Node* node : graph.topological_order()) {
    const ::onnx::OpSchema* schema = node->domain().empty()
                                         ? ::onnx::OpSchemaRegistry::Schema(node->op_type(), static_cast<int>(kOnnxExportOpset), "")
                                         : nullptr;
    if (schema == nullptr && node->op_type() == "Gelu" && node->domain().empty() && write_decomposed_gelu(*node, g)) {
      const Value* output = node->output(0);
      if (graph_values.count(output) == 0 && output->dtype() != DType::kUndefined) write_value_info(output, g->add_value_info());
      continue;
    }
    if (schema == nullptr) {
      refused[node->op_type() + (node->domain().empty() ? "" : " (domain " + node->domain() + ")") + ": no ONNX op"]
          .push_back(node->name());
      continue;
    }
    onnx::NodeProto* out = g->add_node();
    out->set_name(node->name());
    out->set_op_type(node->op_type());
    for (const Value* input : node->inputs()) out->add_input(input != nullptr ? input->name() : "");
    for (const Value* output : node->outputs()) out->add_output(output->name());
    for (const auto& [name, value] : node->attributes()) {
      if (name == "axes" && axes_as_input_ops().count(node->op_type()) != 0) {
        const std::vector<int64_t>& axes = value.ints();
        std::string axes_name = node->name() + "_axes";
        *g->add_initializer() = tensor_to_onnx(Tensor::from_vector(axes, {static_cast<int64_t>(axes.size())}), axes_name);
        while (out->input_size() < 1) out->add_input("");
        if (out->input_size() == 1) out->add_input(axes_name);
        else out->set_input(1, axes_name);
        continue;
      }
      std::string why;
      if (schema->attributes().count(name) == 0) {
        why = "attribute '" + name + "' has no ONNX form";
      } else {
        why = write_attribute(name, value, out->add_attribute());
      }
      if (!why.empty()) refused[node->op_type() + ": " + why].push_back(node->name());
    }
    for (const Value* output : node->outputs()) {
      if (graph_values.count(output) == 0 && output->dtype() != DType::kUndefined) write_value_info(output, g->add_value_info());
    }
  }
  if (!refused.empty()) {
    std::string message = "cannot export graph '" + graph.name() + "' to ONNX:";
    for (const auto& [what, nodes] : refused) {
      message += "\n  " + what + "; node" + (nodes.size() == 1 ? " " : "s ");
      for (size_t i = 0; i < nodes.size() && i < 8; ++i) message += (i == 0 ? "'" : ", '") + nodes[i] + "'";
      if (nodes.size() > 8) message += " and " + std::to_string(nodes.size() - 8) + " more";
    }
    throw Error(ErrorKind::kUnsupported, message);
  }
  for (const Value* output : graph.outputs()) write_value_info(output, g->add_output());
  return proto;
}

void export_onnx_model(const Model& model, const std::string& path) {
  onnx::ModelProto proto = to_onnx_model(model);
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    throw Error(ErrorKind::kInternal, "could not serialize the ONNX model (over 2 GiB?)").with_file(path);
  }
  write_file_atomically(path, bytes);
}

}  // namespace weir
