// If, Loop and Scan schemas: output types from the sub-graphs' outputs.
#include <algorithm>
#include <optional>

#include "core/graph.h"
#include "ops/control/control_flow.h"
#include "ops/control/control_flow_layout.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

std::string type_text(const TensorType& type) { return type.to_string(); }

// Fails when both dtypes are known and differ.
void check_dtype(const InferenceContext& ctx, DType expected, DType actual, const std::string& what) {
  if (expected != DType::kUndefined && actual != DType::kUndefined && expected != actual) {
    ctx.fail(what + " is " + std::string(dtype_name(actual)) + ", expected " + std::string(dtype_name(expected)));
  }
}

// A bool (or int64) input that must hold one element.
void check_flag_input(const InferenceContext& ctx, size_t index, DType dtype, const char* name) {
  const TensorType* type = ctx.input_type(index);
  if (type == nullptr) return;
  check_dtype(ctx, dtype, type->dtype, std::string("input ") + name);
  check_scalar_input(ctx, index, name);
}

// Two types one value may have (If's branches, a loop-carried value before
// and after an iteration): dims that differ become symbolic, named
// "<node>:<output>:<axis>"; a rank that differs becomes unknown.
TensorType merge_types(const InferenceContext& ctx, const TensorType& a, const TensorType& b, size_t output) {
  TensorType merged{a.dtype != DType::kUndefined ? a.dtype : b.dtype, Shape::unknown_rank()};
  // Sequences and optionals (a type of unknown dtype says neither): a
  // sequence stays one; either side optional makes the value optional.
  const bool a_known = a.dtype != DType::kUndefined, b_known = b.dtype != DType::kUndefined;
  if (a_known && b_known && a.sequence != b.sequence) {
    ctx.fail("output " + std::to_string(output) + " is " + type_text(a) + " one way and " + type_text(b) +
             " the other; a sequence and a tensor cannot be one value");
  }
  merged.sequence = a_known ? a.sequence : b.sequence;
  merged.optional = a.optional || b.optional;
  if (!a.shape.has_rank() || !b.shape.has_rank() || a.shape.rank() != b.shape.rank()) return merged;
  std::vector<Dim> dims;
  for (size_t axis = 0; axis < a.shape.dims().size(); ++axis) {
    if (a.shape[axis] == b.shape[axis]) {
      dims.push_back(a.shape[axis]);
    } else {
      dims.push_back(Dim::symbol(ctx.node().name() + ":" + std::to_string(output) + ":" + std::to_string(axis)));
    }
  }
  merged.shape = Shape(std::move(dims));
  return merged;
}

// `type` with `dim` inserted at `axis` (unknown rank stays unknown).
TensorType with_axis(const InferenceContext& ctx, const TensorType& type, int64_t axis, const Dim& dim,
                     const std::string& what) {
  if (!type.shape.has_rank()) return type;
  std::vector<Dim> dims = type.shape.dims();
  int64_t at = control_flow_axis(ctx.node(), axis, static_cast<int64_t>(dims.size()) + 1, what);
  dims.insert(dims.begin() + at, dim);
  return TensorType{type.dtype, Shape(std::move(dims))};
}

// `type` without `axis` (unknown rank stays unknown).
TensorType without_axis(const InferenceContext& ctx, const TensorType& type, int64_t axis, const std::string& what) {
  if (!type.shape.has_rank()) return type;
  std::vector<Dim> dims = type.shape.dims();
  int64_t at = control_flow_axis(ctx.node(), axis, static_cast<int64_t>(dims.size()), what);
  dims.erase(dims.begin() + at);
  return TensorType{type.dtype, Shape(std::move(dims))};
}

// Each sub-graph input's dtype against the value the node gives it.
void check_body_inputs(const InferenceContext& ctx, const Graph& body, const char* body_name,
                       const std::vector<TensorType>& given) {
  for (size_t i = 0; i < given.size() && i < body.inputs().size(); ++i) {
    const Value* input = body.inputs()[i];
    check_dtype(ctx, given[i].dtype, input->dtype(),
                std::string(body_name) + " input " + std::to_string(i) + " '" + input->name() + "'");
  }
}

TensorType input_or_unknown(const InferenceContext& ctx, size_t index) {
  const TensorType* type = ctx.input_type(index);
  return type != nullptr ? *type : TensorType();
}

void infer_if(InferenceContext& ctx) {
  const Node& node = ctx.node();
  const size_t captured = if_captured_inputs(node);
  check_flag_input(ctx, 0, DType::kBool, "cond");
  const Graph& then_branch = control_flow_subgraph(node, "then_branch");
  const Graph& else_branch = control_flow_subgraph(node, "else_branch");
  std::vector<TensorType> given;
  for (size_t i = 0; i < captured; ++i) given.push_back(input_or_unknown(ctx, 1 + i));
  check_body_inputs(ctx, then_branch, "then_branch", given);
  check_body_inputs(ctx, else_branch, "else_branch", given);
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const TensorType& a = then_branch.outputs()[i]->type();
    const TensorType& b = else_branch.outputs()[i]->type();
    if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype) {
      ctx.fail("output " + std::to_string(i) + ": then_branch gives " + type_text(a) + ", else_branch " + type_text(b) +
               "; both branches must give one dtype");
    }
    ctx.set_output_type(i, merge_types(ctx, a, b, i));
  }
}

void infer_loop(InferenceContext& ctx) {
  const Node& node = ctx.node();
  const LoopLayout layout = loop_layout(node);
  const Graph& body = control_flow_subgraph(node, "body");
  check_flag_input(ctx, 0, DType::kInt64, "M");
  check_flag_input(ctx, 1, DType::kBool, "cond");
  std::vector<TensorType> given = {TensorType{DType::kInt64, Shape{}}, TensorType{DType::kBool, Shape{}}};
  for (size_t i = 2; i < node.num_inputs(); ++i) given.push_back(input_or_unknown(ctx, i));
  check_body_inputs(ctx, body, "body", given);
  check_dtype(ctx, DType::kBool, body.outputs()[0]->dtype(), "body output 0 (cond) '" + body.outputs()[0]->name() + "'");

  // A constant M without cond runs exactly M times.
  Dim iterations = Dim::symbol(node.name() + ":iterations");
  if (node.num_inputs() > 1 && node.input(1) == nullptr) {
    if (std::optional<std::vector<int64_t>> trip = constant_ints(ctx, 0); trip && trip->size() == 1) {
      iterations = Dim(std::max<int64_t>(0, (*trip)[0]));
    }
  }
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const Value* out = body.outputs()[1 + i];
    if (i < layout.carried) {
      const TensorType initial = input_or_unknown(ctx, 2 + i);
      check_dtype(ctx, initial.dtype, out->dtype(),
                  "body output " + std::to_string(1 + i) + " '" + out->name() + "' (loop-carried)");
      ctx.set_output_type(i, merge_types(ctx, initial, out->type(), i));
    } else {
      ctx.set_output_type(i, with_axis(ctx, out->type(), 0, iterations, "scan output"));
    }
  }
}

void infer_scan(InferenceContext& ctx) {
  const Node& node = ctx.node();
  const ScanLayout layout = scan_layout(node);
  const Graph& body = control_flow_subgraph(node, "body");
  if (layout.has_sequence_lens) check_dtype(ctx, DType::kInt64, input_or_unknown(ctx, 0).dtype, "input sequence_lens");
  // The batched form: states and scan inputs have a leading batch axis, the
  // scan axis is 1 (0 once the batch axis is dropped).
  std::optional<Dim> batch;
  auto drop_batch = [&](const TensorType& type, const std::string& what) {
    if (!layout.batched || !type.shape.has_rank()) return type;
    if (type.shape.rank() < 1) ctx.fail(what + " " + type_text(type) + " has no batch axis");
    if (!batch || (batch->is_symbolic() && type.shape[0].is_static())) batch = type.shape[0];
    return without_axis(ctx, type, 0, what);
  };

  std::vector<TensorType> given;
  for (size_t i = 0; i < layout.states; ++i) {
    given.push_back(drop_batch(input_or_unknown(ctx, layout.first_state + i), "state " + std::to_string(i)));
  }
  std::optional<Dim> length;
  for (size_t j = 0; j < layout.scan_inputs; ++j) {
    const std::string what = "scan input " + std::to_string(j);
    const TensorType type = drop_batch(input_or_unknown(ctx, layout.first_state + layout.states + j), what);
    if (type.shape.has_rank()) {
      int64_t axis = control_flow_axis(node, layout.input_axes[j], type.shape.rank(), what);
      const Dim& dim = type.shape[static_cast<size_t>(axis)];
      if (length && length->is_static() && dim.is_static() && length->size() != dim.size()) {
        ctx.fail(what + " " + type_text(type) + " has " + dim.to_string() + " steps along axis " +
                 std::to_string(axis) + ", scan input 0 " + length->to_string());
      }
      if (!length || (length->is_symbolic() && dim.is_static())) length = dim;
    }
    given.push_back(without_axis(ctx, type, layout.input_axes[j], what));
  }
  for (size_t c = 0; c < layout.captured; ++c) {
    given.push_back(input_or_unknown(ctx, layout.first_state + layout.states + layout.scan_inputs + c));
  }
  check_body_inputs(ctx, body, "body", given);

  const Dim steps = length ? *length : Dim::symbol(node.name() + ":steps");
  const Dim batch_dim = batch ? *batch : Dim::symbol(node.name() + ":batch");
  auto add_batch = [&](TensorType type) {
    return layout.batched ? with_axis(ctx, type, 0, batch_dim, "batch") : type;
  };
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const Value* out = body.outputs()[i];
    if (i < layout.states) {
      check_dtype(ctx, given[i].dtype, out->dtype(), "body output " + std::to_string(i) + " '" + out->name() + "' (state)");
      ctx.set_output_type(i, add_batch(merge_types(ctx, given[i], out->type(), i)));
    } else {
      const int64_t axis = layout.output_axes[i - layout.states];
      ctx.set_output_type(i, add_batch(with_axis(ctx, out->type(), axis, steps, "scan output " + std::to_string(i - layout.states))));
    }
  }
}

}  // namespace

void register_control_flow_schemas(OpRegistry& registry) {
  OpSchema if_op("If");
  if_op.input("cond_and_captured", "", Arity::kVariadic)
      .output("outputs", "", Arity::kVariadic)
      .required_attr("then_branch", AttrType::kGraph)
      .required_attr("else_branch", AttrType::kGraph)
      .infer(infer_if)
      .doc("runs then_branch when cond (one bool) is true, else else_branch, on the captured inputs; "
           "outputs are the branch's");
  registry.add(std::move(if_op));

  OpSchema loop("Loop");
  loop.input("M", "I", Arity::kOptional)
      .input("cond", "B", Arity::kOptional)
      .input("v_initial_and_captured", "", Arity::kVariadic)
      .output("v_final_and_scan_outputs", "", Arity::kVariadic)
      .type_constraint("I", {DType::kInt64})
      .type_constraint("B", {DType::kBool})
      .required_attr("body", AttrType::kGraph)
      .attr("num_captured", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_loop)
      .doc("runs body while the iteration count is below M and cond holds (ONNX's table), carrying values "
           "from one iteration to the next; scan outputs stacked along a new axis 0");
  registry.add(std::move(loop));

  OpSchema scan("Scan");
  scan.input("initial_state_and_scan_inputs", "", Arity::kVariadic)
      .output("final_state_and_scan_outputs", "", Arity::kVariadic)
      .required_attr("body", AttrType::kGraph)
      .required_attr("num_scan_inputs", AttrType::kInt)
      .attr("scan_input_axes", AttrType::kInts)
      .attr("scan_input_directions", AttrType::kInts)
      .attr("scan_output_axes", AttrType::kInts)
      .attr("scan_output_directions", AttrType::kInts)
      .attr("num_captured", AttrType::kInt, Attribute(int64_t{0}))
      .attr("batched", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_scan)
      .doc("runs body once per step of the scan inputs (along scan_input_axes, reversed where "
           "scan_input_directions is 1), carrying states; scan outputs stacked along scan_output_axes");
  registry.add(std::move(scan));
}

}  // namespace weir
