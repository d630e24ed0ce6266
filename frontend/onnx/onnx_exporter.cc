#include "frontend/onnx/onnx_exporter.h"

#include <algorithm>
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
  // optional(seq(tensor)) nests from the outside in.
  if (type.optional) proto = proto->mutable_optional_type()->mutable_elem_type();
  if (type.sequence) proto = proto->mutable_sequence_type()->mutable_elem_type();
  onnx::TypeProto::Tensor* tensor = proto->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(type.dtype));
  if (!type.shape.has_rank()) return;
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (const Dim& dim : type.shape.dims()) {
    if (dim.is_static()) shape->add_dim()->set_dim_value(dim.size());
    else shape->add_dim()->set_dim_param(dim.symbol_name());
  }
}

void write_value_info(const Value* value, const std::string& name, onnx::ValueInfoProto* info,
                      const TensorType& type = TensorType()) {
  info->set_name(name);
  const TensorType& written = value != nullptr ? value->type() : type;
  if (written.dtype != DType::kUndefined) write_type(written, info->mutable_type());
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
bool write_decomposed_gelu(const Node& node, const std::string& in, const std::string& result, onnx::GraphProto* g) {
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
  std::string inner;
  if (tanh_form) {
    std::string cube = emit("Mul", {emit("Mul", {in, in}), in});
    std::string sum = emit("Add", {in, emit("Mul", {cube, constant(0.044715)})});
    inner = emit("Tanh", {emit("Mul", {sum, constant(0.7978845608028654)})});
  } else {
    inner = emit("Erf", {emit("Div", {in, constant(1.4142135623730951)})});
  }
  std::string half_x = emit("Mul", {in, constant(0.5)});
  emit("Mul", {half_x, emit("Add", {inner, constant(1.0)})}, result);
  return true;
}

// The names values take in the ONNX graph being written. ONNX names are
// unique across scopes and a sub-graph reads enclosing values by name, so a
// sub-graph's captured inputs take the names of the values they stand for,
// and a value whose name an enclosing scope already uses gets a fresh one.
class NameScope {
 public:
  explicit NameScope(const NameScope* outer) : outer_(outer) {}

  const std::string& name_of(const Value* value) const {
    auto found = names_.find(value);
    return found != names_.end() ? found->second : value->name();
  }
  void alias(const Value* value, const std::string& name) { names_[value] = name; }
  void define(const Value* value) {
    std::string name = value->name();
    if (outer_ != nullptr && outer_->visible(name)) {
      for (int k = 1; outer_->visible(name) || used_.count(name) != 0; ++k) name = value->name() + "_" + std::to_string(k);
    }
    used_.insert(name);
    names_[value] = std::move(name);
  }
  void reserve(const std::string& name) { used_.insert(name); }
  bool visible(const std::string& name) const {
    return used_.count(name) != 0 || (outer_ != nullptr && outer_->visible(name));
  }

 private:
  const NameScope* outer_;
  std::map<const Value*, std::string> names_;
  std::set<std::string> used_;
};

// The sub-graph attributes of If, Loop and Scan, and how many of the node's
// trailing inputs are captured values (ONNX names them inside the body).
bool is_control_flow(const Node& node) {
  return node.domain().empty() && (node.op_type() == "If" || node.op_type() == "Loop" || node.op_type() == "Scan" ||
                                   node.op_type() == "SequenceMap");
}

size_t captured_inputs(const Node& node) {
  if (node.op_type() == "If") return node.num_inputs() > 0 ? node.num_inputs() - 1 : 0;
  return node.has_attr("num_captured") ? static_cast<size_t>(node.attr("num_captured").i()) : 0;
}

// The ONNX domains besides the default one whose ops Weir writes, with the
// opset version their schemas have.
const std::map<std::string, int>& exported_domains() {
  static const std::map<std::string, int> domains = {{"ai.onnx.preview.training", 1}};
  return domains;
}

class GraphWriter {
 public:
  // Weir-only ops, by op type, with the nodes that use them.
  std::map<std::string, std::vector<std::string>> refused;
  std::set<std::string> domains;  // non-default domains the written nodes use

  // Writes `graph` into `g`. Its last `captured.size()` inputs are values of
  // enclosing graphs, written as references to the names in `captured`.
  void write(const Graph& graph, onnx::GraphProto* g, const NameScope* outer, const std::vector<std::string>& captured) {
    NameScope scope(outer);
    const size_t formal = graph.inputs().size() - captured.size();
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      if (i < formal) scope.define(graph.inputs()[i]);
      else scope.alias(graph.inputs()[i], captured[i - formal]);
    }
    for (const Value* constant : graph.constants()) scope.define(constant);
    for (const Value* persistent : graph.persistents()) scope.define(persistent);
    const std::vector<Node*> order = graph.topological_order();
    for (const Node* node : order) {
      for (const Value* output : node->outputs()) scope.define(output);
    }

    g->set_name(graph.name());
    for (size_t i = 0; i < formal; ++i) {
      write_value_info(graph.inputs()[i], scope.name_of(graph.inputs()[i]), g->add_input());
    }
    for (const Value* constant : graph.constants()) {
      *g->add_initializer() = tensor_to_onnx(constant->data(), scope.name_of(constant));
    }
    for (const Value* persistent : graph.persistents()) {
      if (!persistent->data().defined()) {
        throw Error(ErrorKind::kInvalidArgument, "persistent value '" + persistent->name() + "' has no data to export");
      }
      *g->add_initializer() = tensor_to_onnx(persistent->data(), scope.name_of(persistent));
    }
    std::set<const Value*> graph_values(graph.outputs().begin(), graph.outputs().end());
    for (const Node* node : order) write_node(*node, g, scope, graph_values);
    for (const Value* output : graph.outputs()) {
      std::string name = scope.name_of(output);
      if (outer != nullptr && output->kind() == ValueKind::kInput &&
          std::find(graph.inputs().begin() + static_cast<std::ptrdiff_t>(formal), graph.inputs().end(), output) !=
              graph.inputs().end()) {
        // A body output that is an enclosing value: ONNX wants it produced in the body.
        std::string copy = output->name() + "_out";
        for (int k = 1; scope.visible(copy); ++k) copy = output->name() + "_out_" + std::to_string(k);
        scope.reserve(copy);
        onnx::NodeProto* identity = g->add_node();
        identity->set_name(copy);
        identity->set_op_type("Identity");
        identity->add_input(name);
        identity->add_output(copy);
        name = copy;
      }
      write_value_info(output, name, g->add_output());
    }
  }

 private:
  void refuse(const Node& node, const std::string& why) { refused[node.op_type() + ": " + why].push_back(node.name()); }

  void write_node(const Node& node, onnx::GraphProto* g, NameScope& scope, const std::set<const Value*>& graph_values) {
    auto domain = exported_domains().find(node.domain());
    const ::onnx::OpSchema* schema =
        node.domain().empty()
            ? ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(kOnnxExportOpset), "")
            : (domain != exported_domains().end() ? ::onnx::OpSchemaRegistry::Schema(node.op_type(), domain->second, node.domain())
                                                  : nullptr);
    if (schema == nullptr && node.op_type() == "Gelu" && node.domain().empty() &&
        write_decomposed_gelu(node, scope.name_of(node.input(0)), scope.name_of(node.output(0)), g)) {
      const Value* output = node.output(0);
      if (graph_values.count(output) == 0 && output->dtype() != DType::kUndefined) {
        write_value_info(output, scope.name_of(output), g->add_value_info());
      }
      return;
    }
    if (schema == nullptr) {
      refused[node.op_type() + (node.domain().empty() ? "" : " (domain " + node.domain() + ")") + ": no ONNX op"]
          .push_back(node.name());
      return;
    }
    const bool control_flow = is_control_flow(node);
    const size_t captured = control_flow ? captured_inputs(node) : 0;
    if (captured > node.num_inputs()) {
      refuse(node, "num_captured is larger than the input count");
      return;
    }
    std::vector<std::string> onnx_inputs, captured_names;
    for (size_t i = 0; i < node.num_inputs(); ++i) {
      const Value* input = node.input(i);
      std::string name = input != nullptr ? scope.name_of(input) : "";
      if (i < node.num_inputs() - captured) onnx_inputs.push_back(std::move(name));
      else captured_names.push_back(std::move(name));
    }
    if (control_flow && node.op_type() == "Scan" && node.has_attr("batched") && node.attr("batched").i() != 0) {
      write_batched_scan(node, g, scope, onnx_inputs, captured_names, graph_values);
      return;
    }
    onnx::NodeProto* out = g->add_node();
    out->set_name(node.name());
    out->set_op_type(node.op_type());
    if (!node.domain().empty()) {
      out->set_domain(node.domain());
      domains.insert(node.domain());
    }
    for (const std::string& name : onnx_inputs) out->add_input(name);
    for (const Value* output : node.outputs()) out->add_output(scope.name_of(output));
    for (const auto& [name, value] : node.attributes()) {
      if (name == "axes" && axes_as_input_ops().count(node.op_type()) != 0) {
        const std::vector<int64_t>& axes = value.ints();
        std::string axes_name = node.name() + "_axes";
        scope.reserve(axes_name);
        *g->add_initializer() = tensor_to_onnx(Tensor::from_vector(axes, {static_cast<int64_t>(axes.size())}), axes_name);
        while (out->input_size() < 1) out->add_input("");
        if (out->input_size() == 1) out->add_input(axes_name);
        else out->set_input(1, axes_name);
        continue;
      }
      if (control_flow && name == "num_captured") continue;
      if (control_flow && name == "batched") continue;  // 0 here
      if (control_flow && value.type() == AttrType::kGraph && value.g() != nullptr && schema->attributes().count(name) != 0) {
        onnx::AttributeProto* attribute = out->add_attribute();
        attribute->set_name(name);
        attribute->set_type(onnx::AttributeProto::GRAPH);
        if (value.g()->inputs().size() < captured_names.size()) {
          refuse(node, "sub-graph '" + name + "' has fewer inputs than the node's captured values");
          continue;
        }
        write(*value.g(), attribute->mutable_g(), &scope, captured_names);
        continue;
      }
      if (node.domain().empty() && node.op_type() == "Optional" && name == "type" && value.type() == AttrType::kInts) {
        // Weir's ints (ops/sequence/optional_ops.h: dtype, sequence flag,
        // rank, dims) back to ONNX's TypeProto.
        const std::vector<int64_t>& ints = value.ints();
        if (ints.size() < 3 || (ints[2] >= 0 && ints.size() != static_cast<size_t>(ints[2]) + 3)) {
          refuse(node, "attribute 'type' is not (dtype, sequence flag, rank, dims...)");
          continue;
        }
        TensorType type{static_cast<DType>(ints[0]), Shape::unknown_rank(), ints[1] != 0};
        if (ints[2] >= 0) {
          std::vector<Dim> dims;
          for (size_t axis = 3; axis < ints.size(); ++axis) {
            dims.push_back(ints[axis] >= 0 ? Dim(ints[axis]) : Dim::symbol(node.name() + "_type_" + std::to_string(axis - 3)));
          }
          type.shape = Shape(std::move(dims));
        }
        onnx::AttributeProto* attribute = out->add_attribute();
        attribute->set_name(name);
        attribute->set_type(onnx::AttributeProto::TYPE_PROTO);
        write_type(type, attribute->mutable_tp());
        continue;
      }
      std::string why;
      if (schema->attributes().count(name) == 0) {
        why = "attribute '" + name + "' has no ONNX form";
      } else {
        why = write_attribute(name, value, out->add_attribute());
      }
      if (!why.empty()) refuse(node, why);
    }
    write_output_types(node, g, scope, graph_values);
  }

  void write_output_types(const Node& node, onnx::GraphProto* g, const NameScope& scope,
                          const std::set<const Value*>& graph_values) {
    for (const Value* output : node.outputs()) {
      if (graph_values.count(output) == 0 && output->dtype() != DType::kUndefined) {
        write_value_info(output, scope.name_of(output), g->add_value_info());
      }
    }
  }

  // Scan's batched (opset-8) form has no opset-17 op. It is written as what
  // it computes: a Loop over the batch entries (the size from Shape of the
  // first scan input) whose body takes entry b of every state and scan input
  // (Gather) and runs the opset-17 Scan on them; the Loop's scan outputs
  // stack the entries' final states and scan outputs along axis 0.
  void write_batched_scan(const Node& node, onnx::GraphProto* g, NameScope& scope,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& captured_names,
                          const std::set<const Value*>& graph_values) {
    const Graph& body = *node.attr("body").g();
    const size_t scan_inputs = static_cast<size_t>(node.attr("num_scan_inputs").i());
    if (inputs.size() != body.inputs().size() - captured_names.size()) {
      refuse(node, "the batched (opset-8) form with sequence_lens has no opset-" + std::to_string(kOnnxExportOpset) + " form");
      return;
    }
    if (scan_inputs == 0 || scan_inputs > inputs.size()) {
      refuse(node, "num_scan_inputs does not fit the inputs");
      return;
    }
    auto fresh = [&](const std::string& base) {
      std::string name = node.name() + "_" + base;
      for (int k = 1; scope.visible(name); ++k) name = node.name() + "_" + base + "_" + std::to_string(k);
      scope.reserve(name);
      return name;
    };
    auto emit = [](onnx::GraphProto* graph, const char* op, const std::vector<std::string>& in,
                   const std::vector<std::string>& out_names) {
      onnx::NodeProto* proto = graph->add_node();
      proto->set_name(out_names.at(0) + "_node");
      proto->set_op_type(op);
      for (const std::string& name : in) proto->add_input(name);
      for (const std::string& name : out_names) proto->add_output(name);
      return proto;
    };
    auto int_attribute = [](onnx::NodeProto* proto, const char* name, int64_t value) {
      onnx::AttributeProto* attribute = proto->add_attribute();
      attribute->set_name(name);
      attribute->set_type(onnx::AttributeProto::INT);
      attribute->set_i(value);
    };

    const std::string shape = fresh("batch_shape"), axis = fresh("axis_0"), batch = fresh("batch");
    onnx::NodeProto* shape_node = emit(g, "Shape", {inputs[inputs.size() - scan_inputs]}, {shape});
    int_attribute(shape_node, "start", 0);
    int_attribute(shape_node, "end", 1);
    *g->add_initializer() = tensor_to_onnx(Tensor::from_vector<int64_t>({0}, {1}), axis);
    emit(g, "Squeeze", {shape, axis}, {batch});

    onnx::NodeProto* loop = g->add_node();
    loop->set_name(node.name());
    loop->set_op_type("Loop");
    loop->add_input(batch);
    loop->add_input("");
    const size_t outputs = body.outputs().size();
    for (size_t o = 0; o < outputs; ++o) {
      loop->add_output(o < node.num_outputs() ? scope.name_of(node.output(o)) : fresh("unused_" + std::to_string(o)));
    }
    onnx::AttributeProto* attribute = loop->add_attribute();
    attribute->set_name("body");
    attribute->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* entries = attribute->mutable_g();
    entries->set_name(node.name() + "_entries");
    const std::string b = fresh("entry"), cond = fresh("cond"), cond_out = fresh("cond_out");
    write_value_info(nullptr, b, entries->add_input(), TensorType{DType::kInt64, Shape{}});
    write_value_info(nullptr, cond, entries->add_input(), TensorType{DType::kBool, Shape{}});
    emit(entries, "Identity", {cond}, {cond_out});
    std::vector<std::string> scan_in, scan_out;
    for (const std::string& input : inputs) {
      scan_in.push_back(fresh("entry_of_" + input));
      int_attribute(emit(entries, "Gather", {input, b}, {scan_in.back()}), "axis", 0);
    }
    for (size_t o = 0; o < outputs; ++o) scan_out.push_back(fresh("entry_output_" + std::to_string(o)));
    onnx::NodeProto* scan = emit(entries, "Scan", scan_in, scan_out);
    int_attribute(scan, "num_scan_inputs", static_cast<int64_t>(scan_inputs));
    if (node.has_attr("scan_input_directions")) {
      write_attribute("scan_input_directions", node.attr("scan_input_directions"), scan->add_attribute());
    }
    onnx::AttributeProto* scan_body = scan->add_attribute();
    scan_body->set_name("body");
    scan_body->set_type(onnx::AttributeProto::GRAPH);
    write(body, scan_body->mutable_g(), &scope, captured_names);
    entries->add_output()->set_name(cond_out);
    for (const std::string& name : scan_out) entries->add_output()->set_name(name);
    write_output_types(node, g, scope, graph_values);
  }
};

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
  GraphWriter writer;
  writer.write(graph, proto.mutable_graph(), nullptr, {});
  for (const std::string& domain : writer.domains) {
    onnx::OperatorSetIdProto* extra = proto.add_opset_import();
    extra->set_domain(domain);
    extra->set_version(exported_domains().at(domain));
  }
  if (!writer.refused.empty()) {
    std::string message = "cannot export graph '" + graph.name() + "' to ONNX:";
    for (const auto& [what, nodes] : writer.refused) {
      message += "\n  " + what + "; node" + (nodes.size() == 1 ? " " : "s ");
      for (size_t i = 0; i < nodes.size() && i < 8; ++i) message += (i == 0 ? "'" : ", '") + nodes[i] + "'";
      if (nodes.size() > 8) message += " and " + std::to_string(nodes.size() - 8) + " more";
    }
    throw Error(ErrorKind::kUnsupported, message);
  }
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
