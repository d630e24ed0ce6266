#include "frontend/onnx/onnx_importer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <limits>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "core/atomic_file.h"
#include "core/allocation_limits.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/mapped_file.h"
#include "core/type_inference.h"
#include "core/verifier.h"
#include "frontend/onnx/onnx_node_adapters.h"
#include "frontend/onnx/onnx_tensor.h"
#include "frontend/onnx/onnx_wire.h"
#include "ops/register_ops.h"
#include "passes/autodiff/autodiff.h"
#include "passes/graph_match.h"

namespace weir {
namespace {

// protobuf cannot parse a message over 2 GiB; larger weights live in
// external data files.
constexpr size_t kMaxModelFileBytes = (size_t{1} << 31) - 1;
// The newest ONNX opset this importer was written against (ONNX 1.12).
constexpr int64_t kNewestKnownOpset = 17;
// The domain of ONNX's training ops (Gradient).
const char* const kTrainingDomain = "ai.onnx.preview.training";

std::string quoted(const std::string& text) { return "'" + text + "'"; }

// Everything in a model Weir cannot run, gathered over the whole model so
// that one error lists all of it.
class UnsupportedReport {
 public:
  void add_node(const std::string& domain, const std::string& op_type, int64_t opset, const std::string& reason,
                const std::string& node) {
    nodes_[{domain, op_type, opset, reason}].push_back(node);
  }
  void add_value(std::string text) { values_.push_back(std::move(text)); }
  bool empty() const { return nodes_.empty() && values_.empty(); }

  std::string message() const {
    std::set<std::pair<std::string, std::string>> op_types;
    for (const auto& entry : nodes_) op_types.insert({std::get<0>(entry.first), std::get<1>(entry.first)});
    std::string text = "the model uses what Weir does not support";
    if (!op_types.empty()) text += " (" + std::to_string(op_types.size()) + " op type" + (op_types.size() == 1 ? "" : "s") + ")";
    text += ":";
    for (const auto& [key, nodes] : nodes_) {
      const auto& [domain, op_type, opset, reason] = key;
      text += "\n  " + (domain.empty() ? "" : domain + ".") + op_type + " (opset " + std::to_string(opset) + "): " +
              reason + "; node" + (nodes.size() == 1 ? " " : "s ");
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (i == 8) {
          text += " and " + std::to_string(nodes.size() - 8) + " more";
          break;
        }
        text += (i == 0 ? "" : ", ") + quoted(nodes[i]);
      }
    }
    for (const std::string& value : values_) text += "\n  " + value;
    return text;
  }

 private:
  std::map<std::tuple<std::string, std::string, int64_t, std::string>, std::vector<std::string>> nodes_;
  std::vector<std::string> values_;
};

std::string normalize_domain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

// Where an importer's tensors may take their bytes from without copying.
struct TensorSources {
  std::shared_ptr<void> proto_owner;    // keeps the ModelProto alive; nullptr: copy from it
  std::shared_ptr<void> payload_owner;  // keeps `payloads`' bytes alive (the mapped file)
  const std::vector<std::optional<std::string_view>>* payloads = nullptr;  // lifted initializer raw_data
};

// The names a graph reads without defining them (values of enclosing
// scopes), its nested sub-graphs' included, in order of first use.
std::vector<std::string> outer_scope_names(const onnx::GraphProto& graph) {
  std::set<std::string> defined;
  for (const onnx::ValueInfoProto& input : graph.input()) defined.insert(input.name());
  for (const onnx::TensorProto& initializer : graph.initializer()) defined.insert(initializer.name());
  for (const onnx::SparseTensorProto& initializer : graph.sparse_initializer()) defined.insert(initializer.values().name());
  for (const onnx::NodeProto& node : graph.node()) defined.insert(node.output().begin(), node.output().end());
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto use = [&](const std::string& name) {
    if (!name.empty() && defined.count(name) == 0 && seen.insert(name).second) names.push_back(name);
  };
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& input : node.input()) use(input);
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.has_g()) {
        for (const std::string& name : outer_scope_names(attribute.g())) use(name);
      }
      for (const onnx::GraphProto& sub : attribute.graphs()) {
        for (const std::string& name : outer_scope_names(sub)) use(name);
      }
    }
  }
  for (const onnx::ValueInfoProto& output : graph.output()) use(output.name());
  return names;
}

bool is_control_flow(const OnnxNodeDraft& draft) {
  return draft.domain.empty() && (draft.op_type == "If" || draft.op_type == "Loop" || draft.op_type == "Scan" ||
                                   draft.op_type == "SequenceMap");
}

// What the sub-graphs of one node take from it: types for their inputs
// where the model leaves them out (ONNX lets a body's inputs take them from
// the enclosing op), and the outer-scope values they read, which Weir makes
// their last inputs (and the node's, for If, Loop and Scan): Weir's
// sub-graphs take explicit inputs.
struct SubgraphScope {
  std::vector<TensorType> input_types;                     // per formal input; unknown: no hint
  std::vector<std::pair<std::string, Value*>> captured;    // name, the enclosing graph's value
};

class GraphImporter {
 public:
  // `sources.proto_owner` keeps the ModelProto alive (tensors may then view
  // its bytes); `sources.payloads` are the main graph's initializer payloads
  // when they were lifted out before parsing (onnx_wire.h), one per
  // initializer in order, kept alive by `sources.payload_owner`.
  GraphImporter(const OpRegistry& registry, const std::map<std::string, int64_t>& opsets,
                ExternalDataReader* external, UnsupportedReport& report, const GraphImporter* outer = nullptr,
                TensorSources sources = {})
      : registry_(registry), opsets_(opsets), external_(external), report_(report), outer_(outer),
        sources_(outer != nullptr ? TensorSources{outer->sources_.proto_owner, nullptr, nullptr} : std::move(sources)) {}

  std::unique_ptr<Graph> import(const onnx::GraphProto& proto) {
    graph_ = std::make_unique<Graph>(proto.name().empty() ? "main" : proto.name());
    for (const onnx::ValueInfoProto& info : proto.value_info()) declared_[info.name()] = &info.type();
    for (const onnx::ValueInfoProto& info : proto.output()) declared_[info.name()] = &info.type();

    if (sources_.payloads != nullptr && sources_.payloads->size() != static_cast<size_t>(proto.initializer_size())) {
      throw Error(ErrorKind::kInternal, "the lifted initializer payloads do not match the initializers");
    }
    for (int i = 0; i < proto.initializer_size(); ++i) {
      const onnx::TensorProto& initializer = proto.initializer(i);
      const std::string what = "initializer " + quoted(initializer.name());
      if (initializer.name().empty()) throw Error(ErrorKind::kFormat, "an initializer has no name");
      std::optional<HeldBytes> raw;
      if (sources_.payloads != nullptr && (*sources_.payloads)[static_cast<size_t>(i)]) {
        raw = HeldBytes{*(*sources_.payloads)[static_cast<size_t>(i)], sources_.payload_owner};
      }
      define(initializer.name(), graph_->add_constant(initializer.name(), read_tensor(initializer, what, raw)), what);
    }
    if (proto.sparse_initializer_size() > 0) {
      report_.add_value("sparse initializers (" + quoted(proto.sparse_initializer(0).values().name()) +
                        ", ...) are not supported");
    }
    size_t formal = 0;
    for (const onnx::ValueInfoProto& input : proto.input()) {
      // Before IR version 4 every initializer was also listed as an input.
      if (values_.count(input.name()) != 0 && values_.at(input.name())->is_constant()) continue;
      if (input.name().empty()) throw Error(ErrorKind::kFormat, "a graph input has no name");
      std::optional<TensorType> type = type_of(input.type(), "graph input " + quoted(input.name()));
      if (type) type = with_enclosing_type(std::move(*type), formal++);
      Value* value = graph_->add_input(input.name(), type.value_or(TensorType()));
      define(input.name(), value, "graph input " + quoted(input.name()));
      if (!type) tainted_.insert(value);
    }
    add_captured_inputs();
    for (int i = 0; i < proto.node_size(); ++i) import_node(proto.node(i), static_cast<size_t>(i));
    for (const onnx::ValueInfoProto& output : proto.output()) {
      auto found = values_.find(output.name());
      if (found == values_.end()) {
        throw Error(ErrorKind::kFormat, "graph output " + quoted(output.name()) +
                                            " is not produced by any node, initializer or graph input");
      }
      graph_->add_output(found->second);
    }
    return std::move(graph_);
  }

 private:
  Tensor read_tensor(const onnx::TensorProto& proto, const std::string& what,
                     const std::optional<HeldBytes>& raw_data = std::nullopt) {
    try {
      return tensor_from_onnx(proto, what, external_, sources_.proto_owner, raw_data);
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::kUnsupported) throw;
      report_.add_value(error.what());
      return Tensor::scalar(0.0f);  // a stand-in so the rest of the model is still checked
    }
  }

  void define(const std::string& name, Value* value, const std::string& what) {
    if (!values_.emplace(name, value).second) {
      throw Error(ErrorKind::kFormat, what + ": the name " + quoted(name) + " is already defined");
    }
  }

  // The Weir type of an ONNX TypeProto; nullopt (after reporting it) for a
  // type Weir does not have: sequences, maps, optionals, strings, uint32 ...
  std::optional<TensorType> type_of(const onnx::TypeProto& type, const std::string& what) {
    switch (type.value_case()) {
      case onnx::TypeProto::kTensorType: break;
      case onnx::TypeProto::kSequenceType: {
        // seq(tensor): the elements' type with the sequence flag; sequences
        // of sequences or maps are not Weir values.
        const onnx::TypeProto& element = type.sequence_type().elem_type();
        if (element.value_case() != onnx::TypeProto::kTensorType && element.value_case() != onnx::TypeProto::VALUE_NOT_SET) {
          report_.add_value(what + " is a sequence of non-tensors; Weir's sequences hold tensors");
          return std::nullopt;
        }
        std::optional<TensorType> inner = type_of(element, what);
        if (inner) inner->sequence = true;
        return inner;
      }
      case onnx::TypeProto::kOptionalType: {
        const onnx::TypeProto& element = type.optional_type().elem_type();
        if (element.value_case() != onnx::TypeProto::kTensorType && element.value_case() != onnx::TypeProto::kSequenceType) {
          report_.add_value(what + " is an optional of neither a tensor nor a sequence");
          return std::nullopt;
        }
        std::optional<TensorType> inner = type_of(element, what);
        if (inner) inner->optional = true;
        return inner;
      }
      case onnx::TypeProto::kMapType:
        report_.add_value(what + " is a map; Weir has tensors only");
        return std::nullopt;
      case onnx::TypeProto::kSparseTensorType:
        report_.add_value(what + " is a sparse tensor; Weir has dense tensors only");
        return std::nullopt;
      default:  // sub-graph inputs may leave their type to the enclosing op
        return TensorType();
    }
    const onnx::TypeProto::Tensor& tensor = type.tensor_type();
    DType dtype = dtype_from_onnx(tensor.elem_type());
    if (dtype == DType::kUndefined) {
      if (tensor.elem_type() == onnx::TensorProto::UNDEFINED) throw Error(ErrorKind::kFormat, what + " has no element type");
      report_.add_value(what + " has element type " + onnx_type_name(tensor.elem_type()) +
                        ", which Weir does not support");
      return std::nullopt;
    }
    if (!tensor.has_shape()) return TensorType{dtype, Shape::unknown_rank()};
    std::vector<Dim> dims;
    for (int i = 0; i < tensor.shape().dim_size(); ++i) {
      const onnx::TensorShapeProto::Dimension& dim = tensor.shape().dim(i);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0) throw Error(ErrorKind::kFormat, what + " has negative size " + std::to_string(dim.dim_value()));
        dims.emplace_back(dim.dim_value());
      } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
        dims.push_back(Dim::symbol(dim.dim_param()));
      } else {
        dims.push_back(Dim::symbol(what + ":" + std::to_string(i)));  // unnamed: a fresh symbol
      }
    }
    return TensorType{dtype, Shape(std::move(dims))};
  }

  int64_t opset_of(const std::string& domain) const {
    auto found = opsets_.find(domain);
    return found == opsets_.end() ? -1 : found->second;
  }

  Value* lookup(const std::string& name, const std::string& node, const std::string& op_type) {
    auto found = values_.find(name);
    if (found != values_.end()) return found->second;
    for (const GraphImporter* scope = outer_; scope != nullptr; scope = scope->outer_) {
      if (scope->values_.count(name) != 0) {
        report_.add_value("node " + quoted(node) + " in a sub-graph reads outer-scope value " + quoted(name) +
                          "; Weir sub-graphs take explicit inputs");
        Value* stand_in = graph_->add_value(graph_->unique_name(name));
        tainted_.insert(stand_in);
        values_.emplace(name, stand_in);
        return stand_in;
      }
    }
    throw Error(ErrorKind::kFormat, "node " + quoted(node) + " (" + op_type + "): input " + quoted(name) +
                                        " is not produced by any earlier node, initializer or graph input");
  }

  // Converts one attribute; nullopt (with `why` set) for kinds Weir lacks.
  std::optional<Attribute> convert_attribute(const onnx::AttributeProto& proto, const std::string& node,
                                             std::string& why) {
    if (!proto.ref_attr_name().empty()) {
      why = "attribute " + quoted(proto.name()) + " refers to a function attribute";
      return std::nullopt;
    }
    onnx::AttributeProto::AttributeType type = proto.type();
    if (type == onnx::AttributeProto::UNDEFINED) {  // written by old exporters: infer from the field set
      if (proto.has_f()) type = onnx::AttributeProto::FLOAT;
      else if (proto.has_i()) type = onnx::AttributeProto::INT;
      else if (proto.has_s()) type = onnx::AttributeProto::STRING;
      else if (proto.has_t()) type = onnx::AttributeProto::TENSOR;
      else if (proto.has_g()) type = onnx::AttributeProto::GRAPH;
      else if (proto.floats_size() > 0) type = onnx::AttributeProto::FLOATS;
      else if (proto.ints_size() > 0) type = onnx::AttributeProto::INTS;
      else if (proto.strings_size() > 0) type = onnx::AttributeProto::STRINGS;
      else throw Error(ErrorKind::kFormat, "node " + quoted(node) + ": attribute " + quoted(proto.name()) + " has no type and no value");
    }
    const std::string what = "node " + quoted(node) + " attribute " + quoted(proto.name());
    switch (type) {
      case onnx::AttributeProto::FLOAT: return Attribute(static_cast<double>(proto.f()));
      case onnx::AttributeProto::INT: return Attribute(proto.i());
      case onnx::AttributeProto::STRING: return Attribute(proto.s());
      case onnx::AttributeProto::TENSOR: return Attribute(read_tensor(proto.t(), what));
      case onnx::AttributeProto::GRAPH: return Attribute(import_subgraph(proto.g()));
      case onnx::AttributeProto::FLOATS: return Attribute(std::vector<double>(proto.floats().begin(), proto.floats().end()));
      case onnx::AttributeProto::INTS: return Attribute(std::vector<int64_t>(proto.ints().begin(), proto.ints().end()));
      case onnx::AttributeProto::STRINGS:
        return Attribute(std::vector<std::string>(proto.strings().begin(), proto.strings().end()));
      case onnx::AttributeProto::TENSORS: {
        std::vector<Tensor> tensors;
        for (const onnx::TensorProto& t : proto.tensors()) tensors.push_back(read_tensor(t, what));
        return Attribute(std::move(tensors));
      }
      case onnx::AttributeProto::GRAPHS: {
        std::vector<GraphPtr> graphs;
        for (const onnx::GraphProto& g : proto.graphs()) graphs.push_back(import_subgraph(g));
        return Attribute(std::move(graphs));
      }
      case onnx::AttributeProto::SPARSE_TENSOR:
      case onnx::AttributeProto::SPARSE_TENSORS:
        why = "attribute " + quoted(proto.name()) + " is a sparse tensor";
        return std::nullopt;
      case onnx::AttributeProto::TYPE_PROTO: {
        // A tensor or sequence type (Optional's `type`) as ints: the dtype,
        // 1 for a sequence else 0, the rank (-1: unknown), each dim (-1: not fixed).
        const onnx::TypeProto& tp = proto.tp();
        std::optional<TensorType> element;
        if (tp.value_case() == onnx::TypeProto::kTensorType || tp.value_case() == onnx::TypeProto::kSequenceType) {
          element = type_of(tp, what);
        }
        if (!element || element->dtype == DType::kUndefined) {
          why = "attribute " + quoted(proto.name()) + " is a type other than a tensor or a sequence of tensors";
          return std::nullopt;
        }
        std::vector<int64_t> ints = {static_cast<int64_t>(element->dtype), element->sequence ? 1 : 0,
                                     element->shape.has_rank() ? element->shape.rank() : -1};
        if (element->shape.has_rank()) {
          for (const Dim& dim : element->shape.dims()) ints.push_back(dim.is_static() ? dim.size() : -1);
        }
        return Attribute(std::move(ints));
      }
      case onnx::AttributeProto::TYPE_PROTOS:
        why = "attribute " + quoted(proto.name()) + " is a list of types";
        return std::nullopt;
      default:
        throw Error(ErrorKind::kFormat, what + " has unknown type code " + std::to_string(static_cast<int>(type)));
    }
  }

  GraphPtr import_subgraph(const onnx::GraphProto& proto) {
    GraphImporter nested(registry_, opsets_, external_, report_, this);
    nested.scope_ = node_scope_;
    GraphPtr graph(nested.import(proto).release());
    if (!nested.tainted_.empty()) subgraph_tainted_ = true;  // its reasons are in the report
    return graph;
  }

  // --- sub-graphs ---------------------------------------------------------

  // A sub-graph input's declared type, completed from the enclosing op's.
  TensorType with_enclosing_type(TensorType declared, size_t formal) const {
    if (scope_ == nullptr || formal >= scope_->input_types.size()) return declared;
    const TensorType& given = scope_->input_types[formal];
    if (declared.dtype == DType::kUndefined) return given;
    if (!declared.shape.has_rank() && given.dtype == declared.dtype) declared.shape = given.shape;
    return declared;
  }

  void add_captured_inputs() {
    if (scope_ == nullptr) return;
    for (const auto& [name, outer] : scope_->captured) {
      Value* value = graph_->add_input(name, outer->type());
      define(name, value, "outer-scope value " + quoted(name));
      if (outer_->tainted_.count(outer) != 0) tainted_.insert(value);
    }
  }

  // `type` without `axes` (ascending), or unknown where they do not fit.
  static TensorType without_axes(const TensorType& type, std::vector<int64_t> axes) {
    if (!type.shape.has_rank()) return type;
    std::vector<Dim> dims = type.shape.dims();
    const int64_t rank = static_cast<int64_t>(dims.size());
    for (size_t k = axes.size(); k-- > 0;) {
      int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
      if (axis < 0 || axis >= rank || (k + 1 < axes.size() && axis >= axes[k + 1])) return TensorType{type.dtype, Shape::unknown_rank()};
      dims.erase(dims.begin() + axis);
    }
    return TensorType{type.dtype, Shape(std::move(dims))};
  }

  static const onnx::AttributeProto* find_attribute(const onnx::NodeProto& proto, const std::string& name) {
    for (const onnx::AttributeProto& attribute : proto.attribute()) {
      if (attribute.name() == name) return &attribute;
    }
    return nullptr;
  }

  // The scope of `proto`'s sub-graphs: the outer-scope values they read, and
  // the types an If, Loop or Scan gives its body's inputs.
  SubgraphScope subgraph_scope(const onnx::NodeProto& proto, const OnnxNodeDraft& draft) {
    SubgraphScope scope;
    std::set<std::string> seen;
    for (const onnx::AttributeProto& attribute : proto.attribute()) {
      std::vector<const onnx::GraphProto*> graphs;
      if (attribute.has_g()) graphs.push_back(&attribute.g());
      for (const onnx::GraphProto& sub : attribute.graphs()) graphs.push_back(&sub);
      for (const onnx::GraphProto* sub : graphs) {
        for (const std::string& name : outer_scope_names(*sub)) {
          if (seen.insert(name).second) scope.captured.emplace_back(name, lookup(name, draft.name, draft.op_type));
        }
      }
    }
    auto input_type = [&](int index) {
      const size_t i = static_cast<size_t>(index);
      return i < draft.inputs.size() && draft.inputs[i] != nullptr ? draft.inputs[i]->type() : TensorType();
    };
    if (!draft.domain.empty()) return scope;
    if (draft.op_type == "SequenceMap") {  // the body takes elements of the sequence inputs
      for (int i = 0; i < proto.input_size(); ++i) {
        TensorType type = input_type(i);
        type.sequence = false;
        scope.input_types.push_back(type);
      }
    } else if (draft.op_type == "Loop") {
      scope.input_types = {TensorType{DType::kInt64, Shape{}}, TensorType{DType::kBool, Shape{}}};
      for (int i = 2; i < proto.input_size(); ++i) scope.input_types.push_back(input_type(i));
    } else if (draft.op_type == "Scan") {
      const onnx::AttributeProto* count = find_attribute(proto, "num_scan_inputs");
      const int first = draft.opset < 9 ? 1 : 0;  // opset 8: sequence_lens, then batched values
      const int scan_inputs = count != nullptr ? static_cast<int>(count->i()) : 0;
      const int states = proto.input_size() - first - scan_inputs;
      if (states < 0 || scan_inputs < 0) return scope;
      const onnx::AttributeProto* axes = find_attribute(proto, "scan_input_axes");
      for (int i = 0; i < states + scan_inputs; ++i) {
        TensorType type = input_type(first + i);
        std::vector<int64_t> dropped;
        if (first == 1) dropped.push_back(0);  // the batch axis
        if (i >= states) {
          const int j = i - states;
          if (first == 1) dropped.push_back(1);
          else dropped.push_back(axes != nullptr && j < axes->ints_size() ? axes->ints(j) : 0);
        }
        scope.input_types.push_back(without_axes(type, dropped));
      }
    }
    return scope;
  }

  // After the node's sub-graphs are imported: an If, Loop or Scan takes the
  // values they read as its last inputs (Loop and Scan say how many in
  // num_captured); Scan's opset-8 form becomes `batched`; a loop-carried
  // value whose shape changes between iterations gets symbolic dims in the
  // body. Returns why the node cannot be imported, or "".
  std::string take_captured_values(OnnxNodeDraft& draft, const SubgraphScope& scope) {
    if (!is_control_flow(draft)) return "";
    if (draft.op_type == "Scan" && draft.opset < 9) {
      draft.attributes["batched"] = Attribute(int64_t{1});
      auto directions = draft.attributes.find("directions");
      if (directions != draft.attributes.end()) {
        draft.attributes["scan_input_directions"] = directions->second;
        draft.attributes.erase(directions);
      }
      if (!draft.inputs.empty() && draft.inputs[0] == nullptr) draft.inputs.erase(draft.inputs.begin());
    }
    if (draft.op_type == "Loop") {
      while (draft.inputs.size() < 2) draft.inputs.push_back(nullptr);
    }
    for (const auto& [name, value] : scope.captured) draft.inputs.push_back(value);
    size_t captured = scope.captured.size();
    auto body = draft.attributes.find("body");
    if (body == draft.attributes.end() || body->second.type() != AttrType::kGraph || !body->second.g()) return "";
    Graph& graph = *body->second.g();
    if (draft.op_type == "Loop" && draft.inputs.size() == 2) {
      // Weir's variadic inputs take at least one value: a placeholder the body ignores.
      Value* placeholder = graph_->add_constant(graph_->unique_name(draft.name + "_placeholder"), Tensor::scalar(false));
      graph.add_input(graph.unique_name("placeholder"), placeholder->type());
      draft.inputs.push_back(placeholder);
      captured = 1;
    }
    if (draft.op_type != "If" && captured > 0) draft.attributes["num_captured"] = Attribute(static_cast<int64_t>(captured));
    if (draft.op_type == "Loop" && !subgraph_tainted_) generalize_loop_carried(graph, draft.inputs.size() - 2 - captured);
    return "";
  }

  // Loop-carried values whose body output differs in shape from the body
  // input (a value that grows) get the dims that differ symbolic in the
  // body's input, and the body is inferred again, until nothing changes.
  void generalize_loop_carried(Graph& body, size_t carried) {
    if (body.inputs().size() < 2 + carried || body.outputs().size() < 1 + carried) return;  // inference reports it
    for (int round = 0; round < 4; ++round) {
      bool changed = false;
      for (size_t i = 0; i < carried; ++i) {
        Value* input = body.inputs()[2 + i];
        const TensorType& output = body.outputs()[1 + i]->type();
        // A sequence's elements may change rank (SequenceInsert of another
        // shape): its element shape becomes unknown.
        const bool known = output.is_known() || (output.sequence && output.dtype != DType::kUndefined);
        if (!input->type().is_known() || !known || input->dtype() != output.dtype) continue;
        TensorType merged = input->type();  // keeps the sequence and optional flags
        merged.shape = Shape::unknown_rank();
        if (output.shape.has_rank() && input->shape().rank() == output.shape.rank()) {
          std::vector<Dim> dims;
          for (size_t axis = 0; axis < input->shape().dims().size(); ++axis) {
            const Dim& a = input->shape()[axis];
            dims.push_back(a == output.shape[axis] ? a : Dim::symbol(input->name() + ":" + std::to_string(axis)));
          }
          merged.shape = Shape(std::move(dims));
        }
        if (!(merged == input->type())) {
          input->set_type(std::move(merged));
          changed = true;
        }
      }
      if (!changed) return;
      infer_graph_types(body, registry_);
    }
  }

  // A Constant node's value as a tensor (value, value_float(s), value_int(s)).
  std::optional<Tensor> constant_value(const onnx::NodeProto& proto, const std::string& node, std::string& why) {
    if (proto.attribute_size() != 1) {
      throw Error(ErrorKind::kFormat, "Constant node " + quoted(node) + " needs exactly one value attribute, has " +
                                          std::to_string(proto.attribute_size()));
    }
    const onnx::AttributeProto& attribute = proto.attribute(0);
    const std::string& name = attribute.name();
    if (name == "value") return read_tensor(attribute.t(), "Constant node " + quoted(node));
    if (name == "value_float") return Tensor::scalar(attribute.f());
    if (name == "value_int") return Tensor::scalar(attribute.i());
    if (name == "value_floats") {
      std::vector<float> values(attribute.floats().begin(), attribute.floats().end());
      return Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
    }
    if (name == "value_ints") {
      std::vector<int64_t> values(attribute.ints().begin(), attribute.ints().end());
      return Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
    }
    if (name == "value_string" || name == "value_strings") {
      why = "string constants are not supported";
    } else if (name == "sparse_value") {
      why = "sparse constants are not supported";
    } else {
      throw Error(ErrorKind::kFormat, "Constant node " + quoted(node) + " has unknown attribute " + quoted(name));
    }
    return std::nullopt;
  }

  // Outputs of a node that is not imported: values of unknown type, so that
  // the nodes after it are still checked and reported.
  void define_tainted_outputs(const onnx::NodeProto& proto, const std::string& node) {
    for (const std::string& name : proto.output()) {
      if (name.empty()) continue;
      Value* value = graph_->add_value(name);
      define(name, value, "node " + quoted(node));
      tainted_.insert(value);
    }
  }

  // Why Weir's schema cannot describe the adapted node, or "".
  std::string check_against_schema(const OnnxNodeDraft& draft, const OpSchema& schema, size_t num_outputs) {
    for (const auto& [name, value] : draft.attributes) {
      const AttributeSpec* spec = schema.find_attr(name);
      if (spec == nullptr) return "attribute " + quoted(name) + " is not supported";
      if (spec->type != value.type()) {
        return "attribute " + quoted(name) + " is " + std::string(attr_type_name(value.type())) + ", Weir expects " +
               std::string(attr_type_name(spec->type));
      }
    }
    if (draft.inputs.size() > schema.max_inputs()) {
      return std::to_string(draft.inputs.size()) + " inputs; Weir's " + schema.name() + " takes at most " +
             std::to_string(schema.max_inputs());
    }
    // Required inputs must be there: gradient rules and kernels read them.
    if (draft.inputs.size() < schema.min_inputs()) {
      return std::to_string(draft.inputs.size()) + " inputs; Weir's " + schema.name() + " takes at least " +
             std::to_string(schema.min_inputs());
    }
    for (size_t i = 0; i < draft.inputs.size() && i < schema.inputs().size(); ++i) {
      if (draft.inputs[i] == nullptr && schema.inputs()[i].arity == Arity::kSingle) {
        return "input " + std::to_string(i) + " ('" + schema.inputs()[i].name + "') is required but empty";
      }
    }
    if (num_outputs > schema.max_outputs()) {
      return std::to_string(num_outputs) + " outputs; Weir's " + schema.name() + " has at most " +
             std::to_string(schema.max_outputs());
    }
    for (size_t i = 0; i < draft.inputs.size(); ++i) {
      const Value* input = draft.inputs[i];
      if (input == nullptr || input->dtype() == DType::kUndefined) continue;
      const FormalParameter& formal = schema.input_param(i);
      auto allowed = schema.type_constraints().find(formal.type_param);
      if (allowed == schema.type_constraints().end()) continue;
      if (std::find(allowed->second.begin(), allowed->second.end(), input->dtype()) == allowed->second.end()) {
        return "input " + formal.name + " of type " + std::string(dtype_name(input->dtype())) + " is not supported";
      }
    }
    return "";
  }

  void import_node(const onnx::NodeProto& proto, size_t index) {
    const std::string domain = normalize_domain(proto.domain());
    const std::string node = proto.name().empty() ? proto.op_type() + "_" + std::to_string(index) : proto.name();
    if (proto.op_type().empty()) throw Error(ErrorKind::kFormat, "node " + quoted(node) + " has no op_type");
    int64_t opset = opset_of(domain);
    if (opset < 0) {
      throw Error(ErrorKind::kFormat, "node " + quoted(node) + " (" + proto.op_type() + ") is in domain " +
                                          quoted(proto.domain()) + ", which the model does not import");
    }

    OnnxNodeDraft draft{node, proto.op_type(), domain, opset, {}, {}, {}};
    bool tainted = false;
    for (const std::string& name : proto.input()) {
      Value* input = name.empty() ? nullptr : lookup(name, node, proto.op_type());
      if (input != nullptr && tainted_.count(input) != 0) tainted = true;
      draft.inputs.push_back(input);
    }
    while (!draft.inputs.empty() && draft.inputs.back() == nullptr) draft.inputs.pop_back();
    if (domain == kTrainingDomain && proto.op_type() == "Gradient") {
      import_gradient(proto, node, opset, draft.inputs, tainted);
      return;
    }
    SubgraphScope scope = subgraph_scope(proto, draft);

    std::string why;
    if (domain.empty() && proto.op_type() == "Constant") {
      std::optional<Tensor> value = constant_value(proto, node, why);
      if (proto.output_size() != 1 || proto.output(0).empty()) {
        throw Error(ErrorKind::kFormat, "Constant node " + quoted(node) + " needs exactly one output");
      }
      if (value) {
        define(proto.output(0), graph_->add_constant(proto.output(0), std::move(*value)), "Constant node " + quoted(node));
        return;
      }
      report_.add_node(domain, proto.op_type(), opset, why, node);
      define_tainted_outputs(proto, node);
      return;
    }

    node_scope_ = &scope;
    subgraph_tainted_ = false;
    for (const onnx::AttributeProto& attribute : proto.attribute()) {
      if (attribute.name().empty()) throw Error(ErrorKind::kFormat, "node " + quoted(node) + " has an attribute without a name");
      std::optional<Attribute> value = convert_attribute(attribute, node, why);
      if (!value) break;
      if (!draft.attributes.emplace(attribute.name(), std::move(*value)).second) {
        throw Error(ErrorKind::kFormat, "node " + quoted(node) + " has attribute " + quoted(attribute.name()) + " twice");
      }
    }
    node_scope_ = nullptr;
    if (subgraph_tainted_) tainted = true;
    if (why.empty()) why = take_captured_values(draft, scope);
    if (why.empty()) why = adapt_onnx_node(draft, *graph_);
    const OpSchema* schema = registry_.find(draft.op_type, draft.domain);
    if (why.empty() && schema == nullptr) why = "Weir has no such op";

    // Outputs: an empty name skips an optional output; trailing ones are dropped.
    int num_outputs = proto.output_size();
    while (num_outputs > 0 && proto.output(num_outputs - 1).empty()) --num_outputs;
    if (why.empty()) why = check_against_schema(draft, *schema, static_cast<size_t>(num_outputs));
    if (!why.empty()) {
      report_.add_node(domain, proto.op_type(), opset, why, node);
      define_tainted_outputs(proto, node);
      return;
    }

    // With an epilogue, the op's outputs are intermediates and the values
    // the epilogue returns take the ONNX names.
    const bool epilogue = static_cast<bool>(draft.epilogue);
    std::vector<Value*> outputs;
    for (int i = 0; i < num_outputs; ++i) {
      const std::string& name = proto.output(i);
      const bool named = !name.empty() && !epilogue;
      Value* output = graph_->add_value(named ? name : graph_->unique_name(node + (epilogue ? "_adapted" : "_unused")));
      if (named) define(name, output, "node " + quoted(node));
      outputs.push_back(output);
    }
    std::string weir_name = graph_->find_node(node) == nullptr && graph_->find_value(node) == nullptr
                                ? node
                                : graph_->unique_name(node);
    Node* created = graph_->add_node_with_outputs(draft.op_type, draft.inputs, outputs, std::move(draft.attributes),
                                                  weir_name);
    created->set_domain(draft.domain);
    if (tainted) {  // an input's type is unknown: nothing to infer from
      for (Value* output : outputs) tainted_.insert(output);
      if (epilogue) {
        report_.add_node(domain, proto.op_type(), opset, "its adaptation to opset " + std::to_string(opset) +
                                                             " needs the input types, which are unknown", node);
      }
      return;
    }
    infer_node_types(*created, *schema);
    if (!epilogue) return;
    std::vector<Value*> finals = draft.epilogue(*created, *graph_);
    for (int i = 0; i < num_outputs; ++i) {
      const std::string& name = proto.output(i);
      if (name.empty()) continue;
      graph_->rename_value(finals[static_cast<size_t>(i)], name);
      define(name, finals[static_cast<size_t>(i)], "node " + quoted(node));
    }
  }

  // --- ai.onnx.preview.training.Gradient ----------------------------------

  // Gradient(xs, zs, y) is expanded here into the backward nodes Weir's
  // autodiff builds from the op schemas' gradient rules (append_backward,
  // passes/autodiff): d(sum(y))/dx for each x in xs, i.e. the backward pass
  // seeded with ones shaped like y. The node's inputs (xs then zs) are the
  // points the gradient is taken at: where one is not the value its name
  // in xs/zs denotes, the nodes between them and y are computed again from
  // it first. Each output is an Identity of its gradient.
  void import_gradient(const onnx::NodeProto& proto, const std::string& node, int64_t opset,
                       const std::vector<Value*>& inputs, bool tainted) {
    const std::string what = "Gradient node " + quoted(node);
    std::vector<std::string> xs, zs;
    std::optional<std::string> y_name;
    auto reject = [&](const std::string& why) {
      report_.add_node(kTrainingDomain, proto.op_type(), opset, why, node);
      define_tainted_outputs(proto, node);
    };
    for (const onnx::AttributeProto& attribute : proto.attribute()) {
      if (attribute.name() == "xs" || attribute.name() == "zs") {
        if (attribute.type() != onnx::AttributeProto::STRINGS) {
          throw Error(ErrorKind::kFormat, what + ": attribute " + quoted(attribute.name()) + " must be a list of strings");
        }
        (attribute.name() == "xs" ? xs : zs).assign(attribute.strings().begin(), attribute.strings().end());
      } else if (attribute.name() == "y") {
        if (attribute.type() != onnx::AttributeProto::STRING) throw Error(ErrorKind::kFormat, what + ": attribute 'y' must be a string");
        y_name = attribute.s();
      } else {
        return reject("attribute " + quoted(attribute.name()) + " is not supported");
      }
    }
    if (xs.empty()) throw Error(ErrorKind::kFormat, what + " needs attribute 'xs' (the tensors to differentiate with respect to)");
    if (!y_name || y_name->empty()) throw Error(ErrorKind::kFormat, what + " needs attribute 'y' (the tensor to differentiate)");
    const size_t num_independent = xs.size() + zs.size();
    if (static_cast<size_t>(proto.input_size()) != num_independent ||
        std::find(inputs.begin(), inputs.end(), nullptr) != inputs.end() || inputs.size() != num_independent) {
      throw Error(ErrorKind::kFormat, what + " has " + std::to_string(proto.input_size()) +
                                          " inputs; it needs one per name in 'xs' and 'zs' (" +
                                          std::to_string(num_independent) + "), none empty");
    }
    if (static_cast<size_t>(proto.output_size()) > xs.size()) {
      throw Error(ErrorKind::kFormat, what + " has " + std::to_string(proto.output_size()) +
                                          " outputs; it has one per name in 'xs' (" + std::to_string(xs.size()) + ")");
    }
    auto named = [&](const std::string& name, const char* attribute) {
      auto found = values_.find(name);
      if (found == values_.end()) {
        throw Error(ErrorKind::kFormat, what + ": " + attribute + " names " + quoted(name) +
                                            ", which no earlier node, initializer or graph input defines");
      }
      return found->second;
    };
    Value* y = named(*y_name, "'y'");
    std::map<const Value*, Value*> at;  // a value named in xs/zs -> the input the gradient is taken at
    for (size_t i = 0; i < num_independent; ++i) {
      Value* value = named(i < xs.size() ? xs[i] : zs[i - xs.size()], i < xs.size() ? "'xs'" : "'zs'");
      if (value != inputs[i]) at[value] = inputs[i];
    }
    // A value of unknown type: the model is refused for its source already.
    if (tainted || !tainted_.empty()) {
      define_tainted_outputs(proto, node);
      return;
    }
    if (!is_floating(y->dtype())) return reject("'y' (" + quoted(y->name()) + ") is " + y->type().to_string() + ", not floating-point");

    // The forward nodes again, from the given inputs, where they differ.
    if (!at.empty()) {
      const std::unordered_set<const Node*> feeds_y = nodes_feeding(y);
      std::map<const Value*, Value*> again = at;
      for (Node* forward : graph_->topological_order()) {
        if (feeds_y.count(forward) == 0) continue;
        std::vector<Value*> reads = forward->inputs();
        bool changed = false;
        for (Value*& input : reads) {
          auto found = input != nullptr ? again.find(input) : again.end();
          if (found == again.end()) continue;
          input = found->second;
          changed = true;
        }
        if (!changed) continue;
        Node* copy = graph_->add_node(forward->op_type(), reads, forward->num_outputs(), forward->attributes(),
                                      graph_->unique_name(forward->name() + "_" + node));
        copy->set_domain(forward->domain());
        weir::infer_node_types(*copy, registry_);
        for (size_t k = 0; k < forward->num_outputs(); ++k) {
          if (forward->output(k) != nullptr) again[forward->output(k)] = copy->output(k);
        }
      }
      if (again.count(y) != 0) y = again.at(y);
    }
    std::vector<Value*> wrt(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(xs.size()));

    // The gradient of sum(y) (a seed of ones shaped like y): autodiff
    // differentiates a one-element value. The sum (flat first where y's
    // rank is unknown) only defines the backward pass; it is not kept.
    std::vector<Node*> seed;
    Value* loss = y;
    auto add_seed = [&](const std::string& op_type, std::vector<Value*> reads, std::map<std::string, Attribute> attributes) {
      seed.push_back(graph_->add_node(op_type, reads, 1, std::move(attributes), graph_->unique_name(node + "_" + op_type)));
      weir::infer_node_types(*seed.back(), registry_);
      return seed.back()->output(0);
    };
    Value* flat = nullptr;
    if (!y->shape().has_rank()) {
      flat = graph_->add_constant(graph_->unique_name(node + "_flat"), Tensor::from_vector<int64_t>({-1}, {1}));
      loss = add_seed("Reshape", {loss, flat}, {});
    }
    if (!loss->shape().is_static() || loss->shape().num_elements() != 1) {
      loss = add_seed("ReduceSum", {loss}, {{"keepdims", Attribute(int64_t{0})}});
    }
    std::vector<Value*> grads;
    try {
      grads = append_backward(*graph_, loss, wrt, registry_);
    } catch (const Error& error) {
      return reject(error.message());
    } catch (const std::exception& error) {  // a gradient rule on a node the schema check let through
      return reject(std::string("differentiating failed: ") + error.what());
    }
    for (auto it = seed.rbegin(); it != seed.rend() && (*it)->output(0)->uses().empty(); ++it) graph_->remove_node(*it);
    if (flat != nullptr && flat->uses().empty()) graph_->remove_value(flat);

    for (int i = 0; i < proto.output_size(); ++i) {
      const size_t k = static_cast<size_t>(i);
      if (proto.output(i).empty() || grads[k] != nullptr) continue;
      const std::string& x = xs[k];
      return reject(is_floating(wrt[k]->dtype())
                        ? "'y' (" + quoted(std::as_const(*y_name)) + ") does not depend on " + quoted(x) + " (in 'xs')"
                        : quoted(x) + " (in 'xs') is " + wrt[k]->type().to_string() + ", not floating-point");
    }
    const OpSchema& identity = registry_.get("Identity", "");
    for (int i = 0; i < proto.output_size(); ++i) {
      const std::string& name = proto.output(i);
      if (name.empty()) continue;
      const size_t k = static_cast<size_t>(i);
      Value* output = graph_->add_value(name);
      define(name, output, what);
      Node* copy = graph_->add_node_with_outputs("Identity", {grads[k]}, {output}, {}, graph_->unique_name(node + "_" + name));
      infer_node_types(*copy, identity);
    }
  }

  // Sets the node's output types from Weir's inference, checked against the
  // types the model declares; keeps the declared type where inference knows
  // less.
  void infer_node_types(Node& node, const OpSchema& schema) {
    std::vector<TensorType> inferred = infer_output_types(node, schema);
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      Value* output = node.output(i);
      std::optional<TensorType> declared;
      auto found = declared_.find(output->name());
      if (found != declared_.end() && found->second->value_case() == onnx::TypeProto::kTensorType &&
          dtype_from_onnx(found->second->tensor_type().elem_type()) != DType::kUndefined) {
        declared = type_of(*found->second, "value " + quoted(output->name()));
      }
      TensorType type = i < inferred.size() ? inferred[i] : TensorType();
      if (declared) {
        if (!types_compatible(*declared, type)) {
          throw Error(ErrorKind::kShape, node.op_type() + " " + quoted(node.name()) + ": output " +
                                             quoted(output->name()) + " is declared " + declared->to_string() +
                                             " in the model, Weir infers " + type.to_string())
              .with_node(node.name());
        }
        if (type.dtype == DType::kUndefined) type.dtype = declared->dtype;
        if (!type.shape.has_rank()) type.shape = declared->shape;
      }
      output->set_type(std::move(type));
    }
  }

  const OpRegistry& registry_;
  const std::map<std::string, int64_t>& opsets_;
  ExternalDataReader* external_;
  UnsupportedReport& report_;
  const GraphImporter* outer_;
  TensorSources sources_;
  std::unique_ptr<Graph> graph_;
  std::map<std::string, Value*> values_;
  std::map<std::string, const onnx::TypeProto*> declared_;
  std::set<const Value*> tainted_;  // values whose type is unknown because Weir cannot import their source
  const SubgraphScope* scope_ = nullptr;       // what the enclosing node gives this sub-graph
  const SubgraphScope* node_scope_ = nullptr;  // while a node's sub-graphs are imported
  bool subgraph_tainted_ = false;              // one of them has a value of unknown type
};

Model import_model_proto(const onnx::ModelProto& proto, const std::string& source, ExternalDataReader* external,
                         const OnnxImportOptions& options, TensorSources sources = {}) {
  const OpRegistry& registry = options.registry != nullptr ? *options.registry : default_op_registry();
  if (!proto.has_graph()) throw Error(ErrorKind::kFormat, "the model has no graph").with_file(source);
  std::map<std::string, int64_t> opsets;
  for (const onnx::OperatorSetIdProto& opset : proto.opset_import()) {
    opsets[normalize_domain(opset.domain())] = opset.version();
  }
  if (opsets.count("") != 0 && opsets.at("") > kNewestKnownOpset) {
    logger().warn("ONNX model '{}' uses opset {}; this importer knows opsets up to {}", source, opsets.at(""),
                  kNewestKnownOpset);
  }

  UnsupportedReport report;
  Model model;
  LoadBudget budget;  // every tensor the model declares counts against the per-model cap
  try {
    GraphImporter importer(registry, opsets, external, report, nullptr, std::move(sources));
    std::unique_ptr<Graph> graph = importer.import(proto.graph());
    if (!report.empty()) throw Error(ErrorKind::kUnsupported, report.message());
    model.graph = std::move(graph);
  } catch (Error& error) {
    // A model can be both malformed and unsupported: the format error wins,
    // but the report still says what else was found.
    throw error.with_file(source);
  }
  verify_graph(*model.graph, registry);
  model.metadata.emplace_back("onnx.producer_name", proto.producer_name());
  model.metadata.emplace_back("onnx.producer_version", proto.producer_version());
  if (opsets.count("") != 0) model.metadata.emplace_back("onnx.opset", std::to_string(opsets.at("")));
  for (const onnx::StringStringEntryProto& entry : proto.metadata_props()) {
    model.metadata.emplace_back(entry.key(), entry.value());
  }
  return model;
}

onnx::ModelProto parse_model(std::string_view bytes, const std::string& source) {
  onnx::ModelProto proto;
  if (bytes.empty()) throw Error(ErrorKind::kFormat, "the file is empty, not an ONNX model").with_file(source);
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(ErrorKind::kFormat, "not an ONNX model: the bytes do not parse as a ModelProto (truncated or not ONNX)")
        .with_file(source);
  }
  if (!proto.has_ir_version()) {
    throw Error(ErrorKind::kFormat, "not an ONNX model: it has no ir_version").with_file(source);
  }
  return proto;
}

}  // namespace

Model import_onnx_model(const std::string& path, const OnnxImportOptions& options) {
  // From a mapping of the file. The initializers' payloads are lifted out
  // first, so protobuf parses only the small rest, and are read from the
  // mapping (views of it where aligned, which keep it alive). Everything
  // else (Constant nodes, tensor attributes, sub-graph initializers) lives
  // in the parsed proto, which is kept alive by the tensors that view it.
  std::shared_ptr<MappedFile> file = map_file(path, kMaxModelFileBytes);
  std::string_view bytes(static_cast<const char*>(file->data), file->size);
  ExternalDataReader external(std::filesystem::absolute(path));
  if (std::optional<WeightlessModel> split = split_initializer_data(bytes)) {
    auto proto = std::make_shared<onnx::ModelProto>(parse_model(split->bytes, path));
    return import_model_proto(*proto, path, &external, options, TensorSources{proto, file, &split->raw_data});
  }
  auto proto = std::make_shared<onnx::ModelProto>(parse_model(bytes, path));
  file.reset();
  return import_model_proto(*proto, path, &external, options, TensorSources{proto, nullptr, nullptr});
}

Model import_onnx_model_from_bytes(const std::string& bytes, const std::string& source,
                                   const OnnxImportOptions& options) {
  return import_model_proto(parse_model(bytes, source), source, nullptr, options);
}

}  // namespace weir
