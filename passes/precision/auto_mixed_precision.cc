#include "passes/precision/auto_mixed_precision.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/kernel.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

enum class Precision { kAllow, kDeny, kFollow };

// The inputs whose dtype is the op's compute dtype: those bound to the same
// type parameter as output 0 ("T" of MatMul's A and B, not Dropout's ratio),
// or, for an op whose output may be wider than its inputs (Gemm and
// FusedMatMul, ops/wide_output.h: output 0 has no type parameter), as input 0.
std::vector<size_t> compute_inputs(const Node& node, const OpSchema& schema) {
  std::vector<size_t> indices;
  if (node.num_outputs() == 0 || schema.outputs().empty()) return indices;
  std::string type_param = schema.output_param(0).type_param;
  if (type_param.empty() && schema.find_attr(kOutputDtypeAttr) != nullptr && schema.max_inputs() > 0) {
    type_param = schema.input_param(0).type_param;
  }
  if (type_param.empty()) return indices;
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    if (node.input(i) != nullptr && i < schema.max_inputs() && schema.input_param(i).type_param == type_param) {
      indices.push_back(i);
    }
  }
  return indices;
}

}  // namespace

DType parse_amp_dtype(const std::string& name) {
  if (name == "bf16" || name == "bfloat16") return DType::kBFloat16;
  if (name == "fp16" || name == "f16" || name == "float16") return DType::kFloat16;
  throw Error(ErrorKind::kInvalidArgument, "unknown AMP precision '" + name + "' (choices: bf16, fp16)");
}

bool amp_needs_loss_scaling(DType low) { return low == DType::kFloat16; }

AutoMixedPrecision::AutoMixedPrecision(AmpOptions options) : options_(std::move(options)) {
  if (options_.low != DType::kBFloat16 && options_.low != DType::kFloat16) {
    throw Error(ErrorKind::kInvalidArgument, "auto_mixed_precision: the low precision must be bf16 or f16, got " +
                                                 std::string(dtype_name(options_.low)));
  }
}

bool AutoMixedPrecision::run(Graph& graph, PassContext& context) {
  const OpRegistry& registry = context.registry();
  const DType low = options_.low;
  low_nodes_ = 0;
  casts_ = 0;
  infer_graph_types(graph, registry);

  std::vector<std::pair<Value*, DType>> outputs;
  for (Value* out : graph.outputs()) outputs.emplace_back(out, out->dtype());

  auto precision_of = [&](const Node& node, const OpSchema& schema) {
    const std::string& op = node.op_type();
    if (options_.deny.count(op)) return Precision::kDeny;
    if (options_.allow.count(op)) return Precision::kAllow;
    if (options_.follow.count(op)) return Precision::kFollow;
    // Writers of persistent state keep the state's dtype.
    if (schema.has(OpTrait::kSideEffects) || schema.has(OpTrait::kFullPrecisionCompute)) return Precision::kDeny;
    if (schema.has(OpTrait::kLowPrecisionCompute)) return Precision::kAllow;
    return Precision::kFollow;
  };
  auto has_low_kernel = [&](const Node& node) {
    DeviceType device = node.device() ? node.device()->type : DeviceType::kCpu;
    return context.kernels().find(KernelOp(node.domain(), node.op_type()), device, low) != nullptr;
  };

  std::map<std::pair<const Value*, DType>, Value*> cast_of;
  std::unordered_set<const Node*> inserted;
  auto cast = [&](Value* value, DType to, const Node& reader) -> Value* {
    auto key = std::make_pair(static_cast<const Value*>(value), to);
    if (auto it = cast_of.find(key); it != cast_of.end()) return it->second;
    Node* producer = value->producer();
    Value* result = nullptr;
    if (producer != nullptr && inserted.count(producer) && producer->input(0)->dtype() == to) {
      result = producer->input(0);  // our own cast undone: read the original
    } else {
      Node* node = graph.add_node("Cast", {value}, 1, {{"to", Attribute(static_cast<int64_t>(to))}},
                                  graph.unique_name(value->name() + "/to_" + std::string(dtype_name(to))));
      node->set_device(reader.device());
      infer_node_types(*node, registry);
      inserted.insert(node);
      result = node->output(0);
      ++casts_;
    }
    cast_of[key] = result;
    return result;
  };

  for (Node* node : graph.topological_order()) {
    if (inserted.count(node) || node->op_type() == "Cast") continue;  // explicit casts stay as written
    const OpSchema* schema = registry.find(node->op_type(), node->domain());
    if (schema == nullptr) continue;
    std::vector<size_t> typed = compute_inputs(*node, *schema);
    bool any_low = false, any_f32 = false;
    for (size_t i : typed) {
      any_low = any_low || node->input(i)->dtype() == low;
      any_f32 = any_f32 || node->input(i)->dtype() == DType::kFloat32;
    }
    if (!any_low && !any_f32) continue;
    Precision precision = precision_of(*node, *schema);
    bool run_low = precision == Precision::kAllow || (precision == Precision::kFollow && any_low);
    if (run_low && !has_low_kernel(*node)) run_low = false;
    const DType target = run_low ? low : DType::kFloat32;
    for (size_t i : typed) {
      Value* input = node->input(i);
      if (input->dtype() == target || (input->dtype() != low && input->dtype() != DType::kFloat32)) continue;
      node->set_input(i, cast(input, target, *node));
    }
    // Re-inferred even when no input changed here: an input may have become
    // low earlier in this walk (a following Identity), and the graph
    // outputs' check below reads the dtypes.
    infer_node_types(*node, registry);
    if (run_low) ++low_nodes_;
  }

  // Graph outputs keep their dtype and name: the name moves to a cast back.
  for (auto& [out, dtype] : outputs) {
    if (out->dtype() == dtype || out->producer() == nullptr) continue;
    Node* producer = out->producer();
    Value* inner = graph.add_value(graph.unique_name(out->name() + "/" + std::string(dtype_name(out->dtype()))), out->type());
    std::vector<Use> uses = out->uses();
    for (const Use& use : uses) use.node->set_input(static_cast<size_t>(use.input_index), inner);
    producer->set_output(static_cast<size_t>(out->producer_output()), inner);
    Node* back = graph.add_node("Cast", {inner}, 1, {{"to", Attribute(static_cast<int64_t>(dtype))}},
                                graph.unique_name(out->name() + "/to_" + std::string(dtype_name(dtype))));
    back->set_device(producer->device());
    Value* placeholder = back->output(0);
    back->set_output(0, out);
    graph.remove_value(placeholder);
    out->set_type({dtype, out->shape()});
    ++casts_;
  }
  infer_graph_types(graph, registry);
  return low_nodes_ > 0 || casts_ > 0;
}

}  // namespace weir
