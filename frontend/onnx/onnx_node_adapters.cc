#include "frontend/onnx/onnx_node_adapters.h"

#include <functional>
#include <limits>

#include "core/op_schema.h"
#include "frontend/onnx/onnx_tensor.h"
#include "ops/gradient_util.h"
#include "ops/register_ops.h"

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

Value* int64_constant(Graph& graph, const OnnxNodeDraft& draft, const std::string& what, const std::vector<int64_t>& values) {
  return add_constant(graph, draft, what, Tensor::from_vector(values, {static_cast<int64_t>(values.size())}));
}

// Adds an `op` node over `inputs` whose output types Weir's schema infers.
Value* add_inferred(Graph& graph, const std::string& op, const std::vector<Value*>& inputs,
                    std::map<std::string, Attribute> attributes, const std::string& name) {
  Node* node = graph.add_node(op, inputs, 1, std::move(attributes), graph.unique_name(name));
  const OpSchema& schema = default_op_registry().get(op);
  std::vector<TensorType> types = infer_output_types(*node, schema);
  node->output(0)->set_type(types.at(0));
  return node->output(0);
}

// The rank of input `index`, or -1 when it is not known.
int64_t rank_of(const OnnxNodeDraft& draft, size_t index) {
  if (!has_input(draft, index) || !draft.inputs[index]->shape().has_rank()) return -1;
  return static_cast<int64_t>(draft.inputs[index]->shape().rank());
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
// (exact for the integer exponents this is used with).
std::string pow_exponent_to_base_type(OnnxNodeDraft& draft, Graph& graph) {
  if (!has_input(draft, 0) || !has_input(draft, 1)) return "";
  DType base = draft.inputs[0]->dtype(), exponent = draft.inputs[1]->dtype();
  if (base == exponent || base == DType::kUndefined || exponent == DType::kUndefined) return "";
  if (!is_floating(base)) {
    // An integer base with a float exponent: the power in the exponent's
    // type, cast back to the base's (truncating, as NumPy's astype does).
    if (!is_floating(exponent)) return "";
    Value* x = draft.inputs[0];
    draft.inputs[0] = add_inferred(graph, "Cast", {x}, {{"to", Attribute(static_cast<int64_t>(exponent))}},
                                   draft.name + "_base_cast");
    draft.epilogue = [base, name = draft.name](Node& op, Graph& g) -> std::vector<Value*> {
      return {add_inferred(g, "Cast", {op.output(0)}, {{"to", Attribute(static_cast<int64_t>(base))}}, name + "_result_cast")};
    };
    return "";
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

// `consumed_inputs` (opsets 1-5) told runtimes which inputs an op could
// overwrite; it has no effect on results.
void drop_consumed_inputs(OnnxNodeDraft& draft) { draft.attributes.erase("consumed_inputs"); }

// Before opset 7, Add/Sub/Mul/Div/Pow and the comparisons broadcast only with
// broadcast=1, and then B's dims matched A's starting at `axis` (default: the
// trailing dims, NumPy's alignment). B gains trailing axes of size 1 so that
// NumPy broadcasting lines it up at `axis`.
std::string legacy_broadcast(OnnxNodeDraft& draft, Graph& graph) {
  if (draft.opset >= 7) return "";
  auto broadcast = draft.attributes.find("broadcast");
  bool enabled = broadcast != draft.attributes.end() && broadcast->second.i() != 0;
  if (broadcast != draft.attributes.end()) draft.attributes.erase(broadcast);
  auto axis_attr = draft.attributes.find("axis");
  if (axis_attr == draft.attributes.end()) return "";
  int64_t axis = axis_attr->second.i();
  draft.attributes.erase(axis_attr);
  if (!enabled) return "";
  int64_t rank_a = rank_of(draft, 0), rank_b = rank_of(draft, 1);
  if (rank_a < 0 || rank_b < 0) return "broadcasting at `axis` (before opset 7) needs the ranks of A and B, which are unknown";
  if (axis < 0) axis += rank_a;
  int64_t trailing = rank_a - axis - rank_b;
  if (axis < 0 || trailing < 0) {
    return "broadcast axis " + std::to_string(axis) + " does not fit B of rank " +
           std::to_string(rank_b) + " into A of rank " + std::to_string(rank_a);
  }
  if (trailing == 0) return "";
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < trailing; ++i) axes.push_back(rank_b + i);
  draft.inputs[1] = add_inferred(graph, "Unsqueeze", {draft.inputs[1]}, {{"axes", Attribute(std::move(axes))}},
                                 draft.name + "_aligned_B");
  return "";
}

// PRelu before opset 7 took a 1-D slope as one value per channel (axis 1);
// it gains trailing axes of size 1 so that opset 7's unidirectional
// broadcasting applies it per channel.
std::string prelu_channel_slope(OnnxNodeDraft& draft, Graph& graph) {
  if (draft.opset >= 7 || rank_of(draft, 1) != 1) return "";
  int64_t rank = rank_of(draft, 0);
  if (rank < 0) return "a 1-D slope before opset 7 is per channel, which needs the input's rank, unknown here";
  const Dim& slope = draft.inputs[1]->shape()[0];
  if (rank < 3 || (slope.is_static() && slope.size() == 1)) return "";
  std::vector<int64_t> axes;
  for (int64_t axis = 1; axis < rank - 1; ++axis) axes.push_back(axis);
  draft.inputs[1] = add_inferred(graph, "Unsqueeze", {draft.inputs[1]}, {{"axes", Attribute(std::move(axes))}},
                                 draft.name + "_channel_slope");
  return "";
}

// Gemm before opset 7 broadcast C only with broadcast=1; Weir's Gemm always
// broadcasts C, which covers both.
std::string gemm_legacy_broadcast(OnnxNodeDraft& draft, Graph&) {
  if (draft.opset < 7) draft.attributes.erase("broadcast");
  return "";
}

// BatchNormalization: is_test (before 7) chose inference, which is Weir's
// default; spatial (before 9) = 0 asked for per-activation statistics.
std::string batch_norm_legacy(OnnxNodeDraft& draft, Graph&) {
  auto is_test = draft.attributes.find("is_test");
  if (is_test != draft.attributes.end()) {
    if (is_test->second.i() == 0) return "training mode before opset 7 (is_test=0) is not supported";
    draft.attributes.erase(is_test);
  }
  auto spatial = draft.attributes.find("spatial");
  if (spatial != draft.attributes.end()) {
    if (spatial->second.i() == 0) return "per-activation statistics (spatial=0, before opset 9) are not supported";
    draft.attributes.erase(spatial);
  }
  return "";
}

// Softmax, LogSoftmax and Hardmax before opset 13 flattened the input to 2-D
// at `axis` (default 1) and normalized over the second dim. On the last axis
// that is the same as opset 13; otherwise the op runs on Flatten(x, axis)
// and a Reshape restores x's shape.
std::string flattened_softmax(OnnxNodeDraft& draft, Graph& graph) {
  if (draft.opset >= 13) return "";
  auto axis_attr = draft.attributes.find("axis");
  int64_t axis = axis_attr == draft.attributes.end() ? 1 : axis_attr->second.i();
  int64_t rank = rank_of(draft, 0);
  if (rank < 0) return "before opset 13 the input was flattened to 2-D at `axis`, which needs its rank, unknown here";
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
  draft.attributes["axis"] = Attribute(int64_t{-1});
  if (axis == rank - 1) return "";
  Value* x = draft.inputs[0];
  draft.inputs[0] = add_inferred(graph, "Flatten", {x}, {{"axis", Attribute(axis)}}, draft.name + "_flat");
  draft.epilogue = [x, name = draft.name](Node& op, Graph& g) -> std::vector<Value*> {
    // A static shape stays visible to shape inference as a constant.
    Value* shape = x->shape().is_static()
                       ? g.add_constant(g.unique_name(name + "_shape"),
                                        Tensor::from_vector(x->shape().sizes(), {static_cast<int64_t>(x->shape().rank())}))
                       : add_inferred(g, "Shape", {x}, {}, name + "_shape");
    return {add_inferred(g, "Reshape", {op.output(0), shape}, {}, name + "_unflat")};
  };
  return "";
}

// Slice before opset 10 took starts, ends and axes as attributes.
std::string slice_attributes_to_inputs(OnnxNodeDraft& draft, Graph& graph) {
  if (draft.opset >= 10) return "";
  size_t index = 1;
  for (const char* name : {"starts", "ends", "axes"}) {
    auto found = draft.attributes.find(name);
    if (found != draft.attributes.end()) {
      set_input(draft, index, int64_constant(graph, draft, name, found->second.ints()));
      draft.attributes.erase(found);
    }
    ++index;
  }
  return "";
}

// Reshape before opset 5 took the shape as an attribute.
std::string reshape_attribute_to_input(OnnxNodeDraft& draft, Graph& graph) {
  auto shape = draft.attributes.find("shape");
  if (draft.opset >= 5 || shape == draft.attributes.end()) return "";
  set_input(draft, 1, int64_constant(graph, draft, "shape", shape->second.ints()));
  draft.attributes.erase(shape);
  return "";
}

// TopK before opset 10 took k as an attribute.
std::string top_k_attribute_to_input(OnnxNodeDraft& draft, Graph& graph) {
  auto k = draft.attributes.find("k");
  if (draft.opset >= 10 || k == draft.attributes.end()) return "";
  set_input(draft, 1, int64_constant(graph, draft, "k", {k->second.i()}));
  draft.attributes.erase(k);
  return "";
}

// Dropout: is_test (before 7) chose inference, Weir's default without
// training_mode; ratio was an attribute before opset 12.
std::string dropout_legacy(OnnxNodeDraft& draft, Graph& graph) {
  auto is_test = draft.attributes.find("is_test");
  if (is_test != draft.attributes.end()) {
    if (is_test->second.i() == 0) return "training mode before opset 7 (is_test=0) is not supported";
    draft.attributes.erase(is_test);
  }
  auto ratio = draft.attributes.find("ratio");
  if (draft.opset < 12 && ratio != draft.attributes.end()) {
    set_input(draft, 1, scalar_constant(graph, DType::kFloat32, ratio->second.f(), draft.name + "_ratio"));
    draft.attributes.erase(ratio);
  }
  return "";
}

// Upsample (opsets 7-9) and Resize at opset 10 scaled by `scales` (an
// attribute at 7, an input after) with pixel coordinates multiplied by the
// scale: Resize's asymmetric transformation, and floor for nearest.
std::string upsample_to_resize(OnnxNodeDraft& draft, Graph& graph) {
  if (draft.op_type == "Resize" && draft.opset >= 11) return "";
  Value* scales = has_input(draft, 1) ? draft.inputs[1] : nullptr;
  auto scales_attr = draft.attributes.find("scales");
  if (scales_attr != draft.attributes.end()) {
    std::vector<float> values(scales_attr->second.floats().begin(), scales_attr->second.floats().end());
    scales = add_constant(graph, draft, "scales", Tensor::from_vector(values, {static_cast<int64_t>(values.size())}));
    draft.attributes.erase(scales_attr);
  }
  if (scales == nullptr) return "needs scales";
  std::string mode = "nearest";
  auto mode_attr = draft.attributes.find("mode");
  if (mode_attr != draft.attributes.end()) mode = mode_attr->second.s();
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") return "mode " + mode + " is not one of nearest, linear";
  draft.attributes.clear();
  draft.attributes["mode"] = Attribute(mode);
  draft.attributes["coordinate_transformation_mode"] = Attribute(std::string("asymmetric"));
  if (mode == "nearest") draft.attributes["nearest_mode"] = Attribute(std::string("floor"));
  draft.inputs = {draft.inputs[0], nullptr, scales};
  draft.op_type = "Resize";
  return "";
}

// RoiAlign before opset 16 had no coordinate_transformation_mode and
// sampled as output_half_pixel does (opset 16's default is half_pixel).
std::string roi_align_legacy_coordinates(OnnxNodeDraft& draft, Graph&) {
  if (draft.opset < 16 && draft.attributes.count("coordinate_transformation_mode") == 0) {
    draft.attributes["coordinate_transformation_mode"] = Attribute(std::string("output_half_pixel"));
  }
  return "";
}

// RNN, GRU and LSTM before opset 7 had `output_sequence`, which only said
// whether Y may be left out; ONNX names the outputs a node produces anyway.
std::string recurrent_output_sequence(OnnxNodeDraft& draft, Graph&) {
  if (draft.opset < 7) draft.attributes.erase("output_sequence");
  return "";
}

// Scatter (opsets 9-10) is ScatterElements without a reduction.
std::string scatter_to_scatter_elements(OnnxNodeDraft& draft, Graph&) {
  draft.op_type = "ScatterElements";
  return "";
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
    built["Pow"] = [](OnnxNodeDraft& draft, Graph& graph) {
      std::string why = legacy_broadcast(draft, graph);
      return why.empty() ? pow_exponent_to_base_type(draft, graph) : why;
    };
    for (const char* op : {"Add", "Sub", "Mul", "Div", "And", "Or", "Xor", "Equal", "Greater", "Less"}) {
      built[op] = legacy_broadcast;
    }
    built["Gemm"] = gemm_legacy_broadcast;
    built["PRelu"] = prelu_channel_slope;
    built["BatchNormalization"] = batch_norm_legacy;
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) built[op] = flattened_softmax;
    built["Slice"] = slice_attributes_to_inputs;
    built["Reshape"] = reshape_attribute_to_input;
    built["TopK"] = top_k_attribute_to_input;
    built["Dropout"] = dropout_legacy;
    built["Upsample"] = upsample_to_resize;
    built["Resize"] = upsample_to_resize;
    built["Scatter"] = scatter_to_scatter_elements;
    built["RoiAlign"] = roi_align_legacy_coordinates;
    for (const char* op : {"RNN", "GRU", "LSTM"}) built[op] = recurrent_output_sequence;
    return built;
  }();
  return table;
}

}  // namespace

std::string adapt_onnx_node(OnnxNodeDraft& draft, Graph& graph) {
  if (!draft.domain.empty()) return "";
  drop_consumed_inputs(draft);
  auto adapter = adapters().find(draft.op_type);
  return adapter == adapters().end() ? "" : adapter->second(draft, graph);
}

}  // namespace weir
