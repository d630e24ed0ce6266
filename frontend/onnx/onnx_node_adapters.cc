#include "frontend/onnx/onnx_node_adapters.h"

#include <functional>
#include <limits>

#include "frontend/onnx/onnx_tensor.h"
#include "ops/gradient_util.h"

namespace weir {
namespace {

using Adapter = std::function<std::string(OnnxNodeDraft&, Graph&)>;

bool has_input(const OnnxNodeDraft& draft, size_t index) {
  return index < draft.inputs.size() && draft.inputs[index] != nullptr;
}

void drop_input(OnnxNodeDraft& draft, size_t index) {
  draft.inputs.erase(draft.inputs.begin() + static_cast<std::ptrdiff_t>(index));
  while (!draft.inputs.empty() && draft.inputs.back() == nullptr) draft.inputs.pop_back();
}

void set_input(OnnxNodeDraft& draft, size_t index, Value* value) {
  if (draft.inputs.size() <= index) draft.inputs.resize(index + 1, nullptr);
  draft.inputs[index] = value;
}

Value* add_constant(Graph& graph, const OnnxNodeDraft& draft, const std::string& what, Tensor tensor) {
  return graph.add_constant(graph.unique_name(draft.name + "_" + what), std::move(tensor));
}

std::vector<int64_t> values_of(const Value* value) {
  const Tensor& t = value->data();
  if (t.dtype() == DType::kInt64) return {t.data<int64_t>(), t.data<int64_t>() + t.num_elements()};
  return {t.data<int32_t>(), t.data<int32_t>() + t.num_elements()};
}

// Squeeze/Unsqueeze/ReduceSum (opset 13) and the other Reduce* (opset 18)
// take axes as input 1. Weir's ops take either; a constant input becomes the
// attribute, which the gradient rules and passes read.
std::string axes_input_to_attribute(OnnxNodeDraft& draft, Graph&) {
  if (!has_input(draft, 1) || !draft.inputs[1]->is_constant()) return "";
  const Value* axes = draft.inputs[1];
  if (axes->dtype() != DType::kInt64 && axes->dtype() != DType::kInt32) return "";
  std::vector<int64_t> values = values_of(axes);
  drop_input(draft, 1);
  // An empty axes input to Squeeze means "every axis of size 1", which is
  // the absent attribute (an empty attribute would remove none).
  if (!(values.empty() && draft.op_type == "Squeeze")) draft.attributes["axes"] = Attribute(std::move(values));
  return "";
}

// Split before opset 13 took the sizes as the `split` attribute.
std::string split_attribute_to_input(OnnxNodeDraft& draft, Graph& graph) {
  auto split = draft.attributes.find("split");
  if (split == draft.attributes.end()) return "";
  const std::vector<int64_t>& sizes = split->second.ints();
  Tensor tensor = Tensor::from_vector(sizes, {static_cast<int64_t>(sizes.size())});
  set_input(draft, 1, add_constant(graph, draft, "split", std::move(tensor)));
  draft.attributes.erase(split);
  return "";
}

// Clip before opset 11 took min and max as float attributes.
std::string clip_attributes_to_inputs(OnnxNodeDraft& draft, Graph& graph) {
  if (draft.opset >= 11) return "";
  DType dtype = has_input(draft, 0) ? draft.inputs[0]->dtype() : DType::kUndefined;
  for (auto [name, index] : {std::pair<const char*, size_t>{"min", 1}, {"max", 2}}) {
    auto found = draft.attributes.find(name);
    if (found == draft.attributes.end()) continue;
    if (dtype == DType::kUndefined) return "the input's dtype, which the bounds take, is not known";
    set_input(draft, index, scalar_constant(graph, dtype, found->second.f(), draft.name + "_" + name));
    draft.attributes.erase(found);
  }
  return "";
}

// Pad before opset 11 took pads and value as attributes.
std::string pad_attributes_to_inputs(OnnxNodeDraft& draft, Graph& graph) {
  if (draft.opset >= 11) return "";
  auto pads = draft.attributes.find("pads");
  if (pads == draft.attributes.end()) return "";
  const std::vector<int64_t>& values = pads->second.ints();
  set_input(draft, 1, add_constant(graph, draft, "pads", Tensor::from_vector(values, {static_cast<int64_t>(values.size())})));
  draft.attributes.erase(pads);
  auto value = draft.attributes.find("value");
  if (value != draft.attributes.end()) {
    DType dtype = has_input(draft, 0) ? draft.inputs[0]->dtype() : DType::kUndefined;
    if (dtype == DType::kUndefined) return "the input's dtype, which the pad value takes, is not known";
    set_input(draft, 2, scalar_constant(graph, dtype, value->second.f(), draft.name + "_value"));
    draft.attributes.erase(value);
  }
  return "";
}

// CastLike(input, target_type) is Cast to target_type's dtype, which the
// importer knows statically.
std::string cast_like_to_cast(OnnxNodeDraft& draft, Graph&) {
  if (!has_input(draft, 1) || draft.inputs[1]->dtype() == DType::kUndefined) {
    return "the dtype of CastLike's target_type input is not known before running";
  }
  draft.attributes["to"] = Attribute(static_cast<int64_t>(draft.inputs[1]->dtype()));
  drop_input(draft, 1);
  draft.op_type = "Cast";
  return "";
}

// Pow (opset 12 on) lets the exponent have another type than the base;
// Weir's Pow takes one type. A float base takes the exponent cast to its type
// (exact for the integer exponents this is used with). An integer base with a
// float exponent would need the power in float and a cast back: refused.
std::string pow_exponent_to_base_type(OnnxNodeDraft& draft, Graph& graph) {
  if (!has_input(draft, 0) || !has_input(draft, 1)) return "";
  DType base = draft.inputs[0]->dtype(), exponent = draft.inputs[1]->dtype();
  if (base == exponent || base == DType::kUndefined || exponent == DType::kUndefined) return "";
  if (base != DType::kFloat32 && base != DType::kFloat64 && base != DType::kFloat16 && base != DType::kBFloat16) {
    return "an integer base with a " + std::string(dtype_name(exponent)) + " exponent is not supported";
  }
  Node* cast = graph.add_node("Cast", {draft.inputs[1]}, 1, {{"to", Attribute(static_cast<int64_t>(base))}},
                              graph.unique_name(draft.name + "_exponent_cast"));
  cast->output(0)->set_type(TensorType{base, draft.inputs[1]->shape()});
  draft.inputs[1] = cast->output(0);
  return "";
}

// Cast to a type Weir lacks (string, uint32, ...).
std::string cast_target_supported(OnnxNodeDraft& draft, Graph&) {
  auto to = draft.attributes.find("to");
  if (to == draft.attributes.end() || to->second.type() != AttrType::kInt) return "";
  int64_t code = to->second.i();
  if (code < 0 || code > std::numeric_limits<int32_t>::max() || !is_valid_dtype(static_cast<int32_t>(code))) {
    return "casting to " + onnx_type_name(static_cast<int32_t>(code)) + " is not supported";
  }
  return "";
}

// Refuses opsets older than the one whose semantics Weir implements, where
// the difference does not show in the node's inputs or attributes.
Adapter requires_opset(int64_t since, std::string what_changed) {
  return [since, what_changed](OnnxNodeDraft& draft, Graph&) -> std::string {
    if (draft.opset >= since) return "";
    return "Weir implements opset " + std::to_string(since) + " and later (" + what_changed + ")";
  };
}

const std::map<std::string, Adapter>& adapters() {
  static const std::map<std::string, Adapter> table = [] {
    std::map<std::string, Adapter> built;
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "Squeeze", "Unsqueeze"}) {
      built[op] = axes_input_to_attribute;
    }
    built["Split"] = split_attribute_to_input;
    built["Clip"] = clip_attributes_to_inputs;
    built["Pad"] = pad_attributes_to_inputs;
    built["CastLike"] = cast_like_to_cast;
    built["Cast"] = cast_target_supported;
    built["Pow"] = pow_exponent_to_base_type;
    const std::string softmax_change = "before opset 13 the input was flattened to 2-D at `axis`";
    built["Softmax"] = requires_opset(13, softmax_change);
    built["LogSoftmax"] = requires_opset(13, softmax_change);
    built["Hardmax"] = requires_opset(13, softmax_change);
    built["Resize"] = requires_opset(11, "opset 10 took (X, scales) and had no roi or coordinate modes");
    return built;
  }();
  return table;
}

}  // namespace

std::string adapt_onnx_node(OnnxNodeDraft& draft, Graph& graph) {
  if (!draft.domain.empty()) return "";
  auto adapter = adapters().find(draft.op_type);
  return adapter == adapters().end() ? "" : adapter->second(draft, graph);
}

}  // namespace weir
