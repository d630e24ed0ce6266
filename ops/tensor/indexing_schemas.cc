#include "ops/tensor/indexing_schemas.h"

#include "core/graph.h"
#include "ops/dtype_sets.h"
#include "ops/gradient_util.h"
#include "ops/shape_inference.h"
#include "ops/tensor/indexing.h"

namespace weir {

namespace {

const std::vector<DType> kIndexTypes = {DType::kInt32, DType::kInt64};

void infer_concat(InferenceContext& ctx) {
  const TensorType* first = ctx.input_type(0);
  if (first == nullptr || !first->shape.has_rank()) return;
  int64_t rank = first->shape.rank();
  int64_t axis = normalize_axis(ctx.attr_int("axis"), rank, ctx);
  std::vector<Dim> dims = first->shape.dims();
  int64_t total = 0;
  bool all_static = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType* t = ctx.input_type(i);
    if (t == nullptr || !t->shape.has_rank()) return;
    if (t->shape.rank() != rank) {
      ctx.fail("input " + std::to_string(i) + " " + t->shape.to_string() + " has rank " + std::to_string(t->shape.rank()) +
               "; input 0 " + first->shape.to_string() + " has " + std::to_string(rank));
    }
    for (int64_t a = 0; a < rank; ++a) {
      const Dim& d = t->shape[static_cast<size_t>(a)];
      const Dim& d0 = dims[static_cast<size_t>(a)];
      if (a != axis && d.is_static() && d0.is_static() && d.size() != d0.size()) {
        ctx.fail("input " + std::to_string(i) + " " + t->shape.to_string() + " differs from input 0 " +
                 first->shape.to_string() + " on axis " + std::to_string(a) + ", which is not the concat axis");
      }
    }
    const Dim& along = t->shape[static_cast<size_t>(axis)];
    if (along.is_static()) total += along.size();
    else all_static = false;
  }
  dims[static_cast<size_t>(axis)] = all_static ? Dim(total) : symbolic_dim(ctx, static_cast<size_t>(axis));
  ctx.set_output_type(0, {first->dtype, Shape(std::move(dims))});
}

void infer_split(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr || !x->shape.has_rank()) return;
  int64_t axis = normalize_axis(ctx.attr_int("axis"), x->shape.rank(), ctx);
  size_t n = ctx.num_outputs();
  const Dim& along = x->shape[static_cast<size_t>(axis)];
  std::vector<Dim> parts(n, symbolic_dim(ctx, static_cast<size_t>(axis)));
  if (auto split = ctx.num_inputs() > 1 ? constant_ints(ctx, 1) : std::nullopt) {
    if (split->size() != n) ctx.fail("split " + format_sizes(*split) + " has " + std::to_string(split->size()) +
                                      " entries for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
      parts[i] = Dim((*split)[i]);
      sum += (*split)[i];
    }
    if (along.is_static() && sum != along.size()) {
      ctx.fail("split " + format_sizes(*split) + " sums to " + std::to_string(sum) + " but axis " + std::to_string(axis) +
               " has " + std::to_string(along.size()));
    }
  } else if (along.is_static() && n > 0 && (ctx.num_inputs() < 2 || ctx.input_type(1) == nullptr)) {
    // Equal parts; the last one smaller when the size does not divide (opset 18).
    int64_t part = (along.size() + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
    for (size_t i = 0; i < n; ++i) {
      parts[i] = Dim(std::max<int64_t>(0, std::min(part, along.size() - part * static_cast<int64_t>(i))));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<Dim> dims = x->shape.dims();
    dims[static_cast<size_t>(axis)] = parts[i];
    ctx.set_output_type(i, {x->dtype, Shape(std::move(dims))});
  }
}

void infer_slice(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr || !x->shape.has_rank()) return;
  auto starts = constant_ints(ctx, 1), ends = constant_ints(ctx, 2);
  auto axes = ctx.num_inputs() > 3 && ctx.input_type(3) != nullptr ? constant_ints(ctx, 3) : std::nullopt;
  auto steps = ctx.num_inputs() > 4 && ctx.input_type(4) != nullptr ? constant_ints(ctx, 4) : std::nullopt;
  bool axes_known = !(ctx.num_inputs() > 3 && ctx.input_type(3) != nullptr) || axes;
  bool steps_known = !(ctx.num_inputs() > 4 && ctx.input_type(4) != nullptr) || steps;
  std::vector<Dim> dims(static_cast<size_t>(x->shape.rank()));
  for (size_t a = 0; a < dims.size(); ++a) dims[a] = symbolic_dim(ctx, a);
  if (starts && ends && axes_known && steps_known && x->shape.is_static()) {
    std::vector<SliceAxis> sliced = resolve_slice(x->shape.sizes(), *starts, *ends, axes ? &*axes : nullptr,
                                                  steps ? &*steps : nullptr, [&](const std::string& m) { ctx.fail(m); });
    for (size_t a = 0; a < dims.size(); ++a) dims[a] = Dim(sliced[a].count);
  }
  ctx.set_output_type(0, {x->dtype, Shape(std::move(dims))});
}

void infer_gather(InferenceContext& ctx) {
  const TensorType* data = ctx.input_type(0);
  const TensorType* indices = ctx.input_type(1);
  if (data == nullptr || indices == nullptr) return;
  if (!data->shape.has_rank() || !indices->shape.has_rank()) {
    ctx.set_output_type(0, {data->dtype, Shape::unknown_rank()});
    return;
  }
  int64_t axis = normalize_axis(ctx.attr_int("axis"), data->shape.rank(), ctx);
  std::vector<Dim> dims(data->shape.dims().begin(), data->shape.dims().begin() + axis);
  dims.insert(dims.end(), indices->shape.dims().begin(), indices->shape.dims().end());
  dims.insert(dims.end(), data->shape.dims().begin() + axis + 1, data->shape.dims().end());
  ctx.set_output_type(0, {data->dtype, Shape(std::move(dims))});
}

void infer_expand(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (auto shape = constant_ints(ctx, 1)) {
    std::vector<Dim> dims(shape->begin(), shape->end());
    ctx.set_output_type(0, {x->dtype, broadcast_shapes(x->shape, Shape(std::move(dims)), ctx)});
    return;
  }
  const TensorType* shape_type = ctx.input_type(1);
  if (shape_type != nullptr && shape_type->shape.is_static() && x->shape.has_rank()) {
    size_t rank = std::max<size_t>(static_cast<size_t>(shape_type->shape.num_elements()), x->shape.dims().size());
    std::vector<Dim> dims(rank);
    for (size_t a = 0; a < rank; ++a) dims[a] = symbolic_dim(ctx, a);
    ctx.set_output_type(0, {x->dtype, Shape(std::move(dims))});
    return;
  }
  ctx.set_output_type(0, {x->dtype, Shape::unknown_rank()});
}

void infer_tile(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr || !x->shape.has_rank()) return;
  std::vector<Dim> dims(x->shape.dims().size());
  auto repeats = constant_ints(ctx, 1);
  if (repeats && repeats->size() != dims.size()) {
    ctx.fail("repeats " + format_sizes(*repeats) + " needs one entry per axis of " + x->shape.to_string());
  }
  for (size_t a = 0; a < dims.size(); ++a) {
    const Dim& d = x->shape[a];
    if (repeats && d.is_static()) {
      // Repeats come from the model: the product is checked, not wrapped.
      int64_t size = 0;
      if ((*repeats)[a] < 0 || __builtin_mul_overflow(d.size(), (*repeats)[a], &size)) {
        ctx.fail("repeats " + format_sizes(*repeats) + " make axis " + std::to_string(a) + " of " +
                 x->shape.to_string() + " negative or overflow");
      }
      dims[a] = Dim(size);
    } else {
      dims[a] = symbolic_dim(ctx, a);
    }
  }
  ctx.set_output_type(0, {x->dtype, Shape(std::move(dims))});
}

DType constant_of_shape_dtype(const InferenceContext& ctx) {
  return ctx.has_attr("value") ? ctx.attr("value").t().dtype() : DType::kFloat32;
}

void infer_constant_of_shape(InferenceContext& ctx) {
  DType dtype = constant_of_shape_dtype(ctx);
  if (auto shape = constant_ints(ctx, 0)) {
    for (int64_t size : *shape) {
      if (size < 0) ctx.fail("shape " + format_sizes(*shape) + " has a negative size");
    }
    ctx.set_output_type(0, {dtype, Shape::from_sizes(*shape)});
    return;
  }
  const TensorType* shape_type = ctx.input_type(0);
  if (shape_type != nullptr && shape_type->shape.is_static()) {
    std::vector<Dim> dims(static_cast<size_t>(shape_type->shape.num_elements()));
    for (size_t a = 0; a < dims.size(); ++a) dims[a] = symbolic_dim(ctx, a);
    ctx.set_output_type(0, {dtype, Shape(std::move(dims))});
    return;
  }
  ctx.set_output_type(0, {dtype, Shape::unknown_rank()});
}

// Constant's tensor: `value`, or one of the value_* shorthands.
void infer_constant(InferenceContext& ctx) {
  const Node& node = ctx.node();
  if (node.has_attr("value")) {
    ctx.set_output_type(0, {node.attr("value").t().dtype(), node.attr("value").t().shape()});
  } else if (node.has_attr("value_float")) {
    ctx.set_output_type(0, {DType::kFloat32, Shape{}});
  } else if (node.has_attr("value_int")) {
    ctx.set_output_type(0, {DType::kInt64, Shape{}});
  } else if (node.has_attr("value_floats")) {
    ctx.set_output_type(0, {DType::kFloat32, Shape{static_cast<int64_t>(node.attr("value_floats").floats().size())}});
  } else if (node.has_attr("value_ints")) {
    ctx.set_output_type(0, {DType::kInt64, Shape{static_cast<int64_t>(node.attr("value_ints").ints().size())}});
  } else {
    ctx.fail("needs one of the attributes value, value_float, value_floats, value_int, value_ints");
  }
}

}  // namespace

void register_indexing_schemas(OpRegistry& registry) {
  OpSchema concat("Concat");
  concat.input("inputs", "T", Arity::kVariadic).output("concat_result", "T").type_constraint("T", kAnyDTypes)
      .required_attr("axis", AttrType::kInt)
      .infer(infer_concat)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        std::vector<Value*> inputs = {grad};
        for (Value* input : ctx.node().inputs()) inputs.push_back(input);
        std::vector<Value*> grads = ctx.emit("ConcatGrad", inputs, ctx.node().num_inputs(), ctx.node().attributes());
        for (size_t i = 0; i < grads.size(); ++i) ctx.set_input_grad(i, grads[i]);
      })
      .doc("joins the inputs along `axis`; every other axis must match");
  registry.add(std::move(concat));
  OpSchema concat_grad("ConcatGrad");
  concat_grad.input("dY", "T").input("inputs", "", Arity::kVariadic).output("grads", "T", Arity::kVariadic)
      .type_constraint("T", kAnyDTypes)
      .required_attr("axis", AttrType::kInt)
      .infer([](InferenceContext& ctx) {
        const TensorType* dy = ctx.input_type(0);
        for (size_t i = 0; i + 1 < ctx.num_inputs() && i < ctx.num_outputs(); ++i) {
          const TensorType* input = ctx.input_type(i + 1);
          if (dy != nullptr && input != nullptr) ctx.set_output_type(i, {dy->dtype, input->shape});
        }
      })
      .doc("splits dY along `axis` into pieces shaped like the inputs: the gradient of Concat");
  registry.add(std::move(concat_grad));

  OpSchema split("Split");
  split.input("input", "T").input("split", "I", Arity::kOptional).output("outputs", "T", Arity::kVariadic)
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .attr("axis", AttrType::kInt, Attribute(int64_t{0}))
      .attr("num_outputs", AttrType::kInt)
      .infer(infer_split)
      .gradient([](GradientContext& ctx) {
        std::vector<Value*> parts;
        bool any = false;
        for (size_t i = 0; i < ctx.node().num_outputs(); ++i) {
          Value* grad = ctx.output_grad(i);
          any = any || grad != nullptr;
          parts.push_back(grad != nullptr ? grad : ctx.emit("ZerosLike", {ctx.node().output(i)})[0]);
        }
        if (!any) return;
        int64_t axis = ctx.node().has_attr("axis") ? ctx.node().attr("axis").i() : 0;
        ctx.set_input_grad(0, ctx.emit("Concat", parts, 1, {{"axis", Attribute(axis)}})[0]);
      })
      .doc("splits along `axis` into the sizes in `split`, or into equal parts (the last one smaller)");
  registry.add(std::move(split));

  OpSchema slice("Slice");
  slice.input("data", "T").input("starts", "I").input("ends", "I").input("axes", "I", Arity::kOptional)
      .input("steps", "I", Arity::kOptional).output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", kIndexTypes)
      .infer(infer_slice)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        std::vector<Value*> inputs = {grad};
        for (Value* input : ctx.node().inputs()) inputs.push_back(input);
        ctx.set_input_grad(0, ctx.emit("SliceGrad", inputs)[0]);
      })
      .doc("elements start, start + step, ... before end on each listed axis (ONNX clamping)");
  registry.add(std::move(slice));
  OpSchema slice_grad("SliceGrad");
  slice_grad.input("dY", "T").input("data", "").input("starts", "I").input("ends", "I")
      .input("axes", "I", Arity::kOptional).input("steps", "I", Arity::kOptional).output("dX", "T")
      .type_constraint("T", kNumericDTypes).type_constraint("I", kIndexTypes)
      .infer(infer_gradient_like_input_1)
      .doc("zeros shaped like data with dY written at the sliced positions: the gradient of Slice");
  registry.add(std::move(slice_grad));

  OpSchema gather("Gather");
  gather.input("data", "T").input("indices", "I").output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", kIndexTypes)
      .attr("axis", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_gather)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("GatherGrad", {grad, ctx.node().input(0), ctx.node().input(1)}, 1,
                                       ctx.node().attributes())[0]);
      })
      .doc("entries of data along `axis` at `indices` (negative indices count from the end)");
  registry.add(std::move(gather));
  OpSchema gather_grad("GatherGrad");
  gather_grad.input("dY", "T").input("data", "").input("indices", "I").output("dX", "T")
      .type_constraint("T", kNumericDTypes).type_constraint("I", kIndexTypes)
      .attr("axis", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_gradient_like_input_1)
      .doc("zeros shaped like data with dY added at the gathered rows (repeats accumulate): the gradient of Gather");
  registry.add(std::move(gather_grad));

  OpSchema expand("Expand");
  expand.input("input", "T").input("shape", "I").output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .infer(infer_expand)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("SumToShape", {grad, ctx.node().input(0)})[0]);
      })
      .doc("input broadcast (NumPy rules) with `shape`");
  registry.add(std::move(expand));

  OpSchema tile("Tile");
  tile.input("input", "T").input("repeats", "I").output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .infer(infer_tile)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("TileGrad", {grad, ctx.node().input(0)})[0]);
      })
      .doc("input repeated repeats[i] times along each axis i");
  registry.add(std::move(tile));
  OpSchema tile_grad("TileGrad");
  tile_grad.input("dY", "T").input("input", "").output("dX", "T").type_constraint("T", kNumericDTypes)
      .infer(infer_gradient_like_input_1)
      .doc("the sum of dY's tiles, shaped like input: the gradient of Tile");
  registry.add(std::move(tile_grad));

  OpSchema constant_of_shape("ConstantOfShape");
  constant_of_shape.input("input", "I").output("output", "T")
      .type_constraint("I", {DType::kInt64}).type_constraint("T", kAnyDTypes)
      .attr("value", AttrType::kTensor)
      .infer(infer_constant_of_shape)
      .doc("a tensor of the given shape filled with `value` (a one-element tensor; default f32 0)");
  registry.add(std::move(constant_of_shape));

  OpSchema range("Range");
  range.input("start", "T").input("limit", "T").input("delta", "T").output("output", "T")
      .type_constraint("T", {DType::kFloat32, DType::kFloat64, DType::kInt16, DType::kInt32, DType::kInt64})
      .infer([](InferenceContext& ctx) {
        const TensorType* start = ctx.input_type(0);
        if (start != nullptr) ctx.set_output_type(0, {start->dtype, Shape{symbolic_dim(ctx, 0)}});
      })
      .doc("start, start + delta, ... up to (not including) limit: max(ceil((limit - start) / delta), 0) values");
  registry.add(std::move(range));

  OpSchema size("Size");
  size.input("data", "T").output("size", "I").type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .infer([](InferenceContext& ctx) { ctx.set_output_type(0, {DType::kInt64, Shape{}}); })
      .doc("the number of elements of data, as an i64 scalar");
  registry.add(std::move(size));

  OpSchema constant("Constant");
  constant.output("output", "T").type_constraint("T", kAnyDTypes)
      .attr("value", AttrType::kTensor)
      .attr("value_float", AttrType::kFloat)
      .attr("value_floats", AttrType::kFloats)
      .attr("value_int", AttrType::kInt)
      .attr("value_ints", AttrType::kInts)
      .infer(infer_constant)
      .doc("the tensor in `value` (or a value_float(s) / value_int(s) shorthand)");
  registry.add(std::move(constant));

  OpSchema zeros("ZerosLike");
  zeros.input("input", "").output("output", "T").type_constraint("T", kAnyDTypes)
      .infer(infer_same_as_input)
      .doc("zeros of the input's type; reads only its shape (Weir op, for gradients that are absent)");
  registry.add(std::move(zeros));
}

}  // namespace weir
