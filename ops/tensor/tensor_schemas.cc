#include "ops/tensor/tensor_schemas.h"

#include <algorithm>
#include <numeric>

#include "core/graph.h"
#include "ops/shape_inference.h"
#include "ops/tensor/shape_slice.h"

namespace weir {

namespace {

const std::vector<DType> kAnyType = {std::begin(kAllDTypes), std::end(kAllDTypes)};

// Output sizes of Reshape for `input` and requested `shape` (0 copies a dim
// unless allowzero, -1 is inferred). Dims that cannot be known statically
// become a symbol named after the node. Fails via ctx on a bad request.
Shape reshape_result(const Shape& input, const std::vector<int64_t>& shape, bool allow_zero, InferenceContext& ctx) {
  std::vector<Dim> dims;
  int inferred_axis = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred_axis >= 0) ctx.fail("shape " + format_sizes(shape) + " has more than one -1");
      inferred_axis = static_cast<int>(i);
      dims.push_back(Dim(1));  // placeholder
    } else if (shape[i] == 0 && !allow_zero) {
      if (!input.has_rank() || i >= input.dims().size()) {
        if (!input.has_rank()) return Shape::unknown_rank();
        ctx.fail("shape entry " + std::to_string(i) + " is 0 (copy) but the input has rank " + std::to_string(input.rank()));
      }
      dims.push_back(input[i]);
    } else if (shape[i] < 0) {
      ctx.fail("shape entry " + std::to_string(i) + " is " + std::to_string(shape[i]) + "; only -1 may be negative");
    } else {
      dims.push_back(Dim(shape[i]));
    }
  }
  if (inferred_axis >= 0) {
    int64_t known = 1;
    bool all_static = input.is_static();
    for (size_t i = 0; i < dims.size(); ++i) {
      if (static_cast<int>(i) == inferred_axis) continue;
      if (dims[i].is_static()) {
        // The entries come from the model: their product may not fit.
        if (__builtin_mul_overflow(known, dims[i].size(), &known)) {
          ctx.fail("shape " + format_sizes(shape) + " has entries whose product does not fit 64 bits");
        }
      } else {
        all_static = false;
      }
    }
    if (all_static) {
      int64_t total = input.num_elements();
      if (known == 0 || total % known != 0) {
        ctx.fail("cannot reshape " + input.to_string() + " (" + std::to_string(total) + " elements) with -1 into groups of " +
                 std::to_string(known));
      }
      dims[static_cast<size_t>(inferred_axis)] = Dim(total / known);
    } else {
      dims[static_cast<size_t>(inferred_axis)] = symbolic_dim(ctx, static_cast<size_t>(inferred_axis));
    }
  }
  Shape result(std::move(dims));
  if (input.is_static() && result.is_static() && input.num_elements() != result.num_elements()) {
    ctx.fail("cannot reshape " + input.to_string() + " (" + std::to_string(input.num_elements()) + " elements) to " +
             result.to_string() + " (" + std::to_string(result.num_elements()) + " elements)");
  }
  return result;
}

void infer_reshape(InferenceContext& ctx) {
  const TensorType* data = ctx.input_type(0);
  const TensorType* shape = ctx.input_type(1);
  if (data == nullptr || shape == nullptr) return;
  if (shape->shape.has_rank() && shape->shape.rank() != 1) ctx.fail("shape must be 1-D, got " + shape->shape.to_string());
  const Tensor* constant = ctx.input_constant(1);
  if (constant == nullptr) {
    // Only the rank is known: the shape tensor's length.
    if (shape->shape.has_rank() && shape->shape[0].is_static()) {
      std::vector<Dim> dims;
      for (int64_t i = 0; i < shape->shape[0].size(); ++i) dims.push_back(symbolic_dim(ctx, static_cast<size_t>(i)));
      ctx.set_output_type(0, TensorType{data->dtype, Shape(std::move(dims))});
    } else {
      ctx.set_output_type(0, TensorType{data->dtype, Shape::unknown_rank()});
    }
    return;
  }
  std::vector<int64_t> requested(constant->data<int64_t>(), constant->data<int64_t>() + constant->num_elements());
  ctx.set_output_type(0, TensorType{data->dtype, reshape_result(data->shape, requested, ctx.attr_int("allowzero") != 0, ctx)});
}

std::vector<int64_t> transpose_perm(const InferenceContext& ctx, int64_t rank) {
  std::vector<int64_t> perm;
  if (ctx.node().has_attr("perm")) {
    perm = ctx.attr_ints("perm");
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(static_cast<size_t>(rank));
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) {
    ctx.fail("perm " + format_sizes(perm) + " is not a permutation of the " + std::to_string(rank) + " axes");
  }
  return perm;
}

void infer_transpose(InferenceContext& ctx) {
  const TensorType* input = ctx.input_type(0);
  if (input == nullptr) return;
  if (!input->shape.has_rank()) {
    ctx.set_output_type(0, *input);
    return;
  }
  std::vector<int64_t> perm = transpose_perm(ctx, input->shape.rank());
  std::vector<Dim> dims;
  for (int64_t axis : perm) dims.push_back(input->shape[static_cast<size_t>(axis)]);
  ctx.set_output_type(0, TensorType{input->dtype, Shape(std::move(dims))});
}

// The gradient of every op that only re-views its input: reshape dY back.
void view_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  Value* original = ctx.emit("Shape", {ctx.node().input(0)})[0];
  ctx.set_input_grad(0, ctx.emit("Reshape", {grad, original})[0]);
}

// Product of dims, or a fresh symbol when any is symbolic; a product past
// int64 (dims from a crafted file) is an error naming the node.
Dim product_dim(const InferenceContext& ctx, const std::vector<Dim>& dims, const std::string& symbol) {
  int64_t product = 1;
  for (const Dim& dim : dims) {
    if (dim.is_symbolic()) return Dim::symbol(symbol);
    if (__builtin_mul_overflow(product, dim.size(), &product)) {
      ctx.fail("the product of the input's dims " + Shape(dims).to_string() + " overflows int64");
    }
  }
  return Dim(product);
}

void infer_flatten(InferenceContext& ctx) {
  const TensorType* input = ctx.input_type(0);
  if (input == nullptr) return;
  if (!input->shape.has_rank()) {
    ctx.set_output_type(0, TensorType{input->dtype, Shape{symbolic_dim(ctx, 0), symbolic_dim(ctx, 1)}});
    return;
  }
  int64_t rank = input->shape.rank();
  int64_t axis = ctx.attr_int("axis");
  if (axis < -rank || axis > rank) ctx.fail("axis " + std::to_string(axis) + " is out of range [-" + std::to_string(rank) + ", " + std::to_string(rank) + "]");
  if (axis < 0) axis += rank;
  const std::vector<Dim>& dims = input->shape.dims();
  Dim outer = product_dim(ctx, {dims.begin(), dims.begin() + axis}, ctx.node().name() + ":0");
  Dim inner = product_dim(ctx, {dims.begin() + axis, dims.end()}, ctx.node().name() + ":1");
  ctx.set_output_type(0, TensorType{input->dtype, Shape{outer, inner}});
}

void infer_squeeze(InferenceContext& ctx) {
  const TensorType* input = ctx.input_type(0);
  if (input == nullptr) return;
  if (!input->shape.has_rank()) {
    ctx.set_output_type(0, TensorType{input->dtype, Shape::unknown_rank()});
    return;
  }
  int64_t rank = input->shape.rank();
  std::vector<bool> remove(static_cast<size_t>(rank), false);
  AxesArgument axes = axes_argument(ctx, 1);
  if (axes.source == AxesArgument::Source::kRunTime) {
    ctx.set_output_type(0, TensorType{input->dtype, Shape::unknown_rank()});
    return;
  }
  if (axes.source == AxesArgument::Source::kKnown) {
    for (int64_t axis : axes.values) {
      size_t index = static_cast<size_t>(normalize_axis(axis, rank, ctx));
      const Dim& dim = input->shape[index];
      if (dim.is_static() && dim.size() != 1) ctx.fail("axis " + std::to_string(axis) + " has size " + std::to_string(dim.size()) + ", not 1");
      remove[index] = true;
    }
  } else {
    for (size_t i = 0; i < remove.size(); ++i) {
      const Dim& dim = input->shape[i];
      if (dim.is_symbolic()) {  // which axes go depends on run-time sizes
        ctx.set_output_type(0, TensorType{input->dtype, Shape::unknown_rank()});
        return;
      }
      remove[i] = dim.size() == 1;
    }
  }
  std::vector<Dim> dims;
  for (size_t i = 0; i < remove.size(); ++i) {
    if (!remove[i]) dims.push_back(input->shape[i]);
  }
  ctx.set_output_type(0, TensorType{input->dtype, Shape(std::move(dims))});
}

void infer_unsqueeze(InferenceContext& ctx) {
  const TensorType* input = ctx.input_type(0);
  if (input == nullptr) return;
  if (!input->shape.has_rank()) {
    ctx.set_output_type(0, TensorType{input->dtype, Shape::unknown_rank()});
    return;
  }
  AxesArgument given = axes_argument(ctx, 1);
  if (given.source == AxesArgument::Source::kAbsent) ctx.fail("needs axes, as an attribute or as input 1");
  if (given.source == AxesArgument::Source::kRunTime) {
    const TensorType* axes_type = ctx.input_type(1);
    if (axes_type->shape.has_rank() && axes_type->shape.rank() == 1 && axes_type->shape[0].is_static()) {
      std::vector<Dim> dims;  // the rank is known; where the ones go is not
      for (int64_t i = 0; i < input->shape.rank() + axes_type->shape[0].size(); ++i) dims.push_back(symbolic_dim(ctx, static_cast<size_t>(i)));
      ctx.set_output_type(0, TensorType{input->dtype, Shape(std::move(dims))});
    } else {
      ctx.set_output_type(0, TensorType{input->dtype, Shape::unknown_rank()});
    }
    return;
  }
  const std::vector<int64_t>& axes = given.values;
  int64_t rank = input->shape.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    size_t index = static_cast<size_t>(normalize_axis(axis, rank, ctx));
    if (inserted[index]) ctx.fail("axis " + std::to_string(axis) + " is listed twice");
    inserted[index] = true;
  }
  std::vector<Dim> dims;
  size_t next = 0;
  for (size_t i = 0; i < inserted.size(); ++i) dims.push_back(inserted[i] ? Dim(1) : input->shape[next++]);
  ctx.set_output_type(0, TensorType{input->dtype, Shape(std::move(dims))});
}

OpSchema view_op(const char* name, ShapeInferenceFn infer, const char* doc) {
  OpSchema schema(name);
  schema.input("data", "T")
      .output("output", "T")
      .type_constraint("T", kAnyType)
      .traits(OpTrait::kInplaceable | OpTrait::kViewOfInput)
      .infer(std::move(infer))
      .gradient(view_gradient)
      .doc(doc);
  return schema;
}

}  // namespace

void register_tensor_schemas(OpRegistry& registry) {
  registry.add(view_op("Flatten", infer_flatten, "A 2-D view: axes before `axis` form the rows, the rest the columns")
                   .attr("axis", AttrType::kInt, Attribute(1)));
  // Both take their axes as the attribute (ONNX before opset 13) or as an
  // optional i64 input (opset 13 on).
  registry.add(view_op("Squeeze", infer_squeeze, "Removes the listed axes of size 1 (all of them when `axes` is absent)")
                   .input("axes", "A", Arity::kOptional)
                   .type_constraint("A", {DType::kInt64})
                   .attr("axes", AttrType::kInts));
  registry.add(view_op("Unsqueeze", infer_unsqueeze, "Inserts axes of size 1 at the listed output positions")
                   .input("axes", "A", Arity::kOptional)
                   .type_constraint("A", {DType::kInt64})
                   .attr("axes", AttrType::kInts));

  OpSchema shape("Shape");
  shape.input("data", "T")
      .output("shape", "I")
      .type_constraint("T", kAnyType)
      .type_constraint("I", {DType::kInt64})
      .attr("start", AttrType::kInt, Attribute(0))
      .attr("end", AttrType::kInt)
      .infer([](InferenceContext& ctx) {
        const TensorType* data = ctx.input_type(0);
        if (data == nullptr) return;
        if (!data->shape.has_rank()) {
          ctx.set_output_type(0, TensorType{DType::kInt64, Shape{Dim::symbol(ctx.node().name() + ":rank")}});
          return;
        }
        auto [start, end] = shape_slice(ctx.node(), data->shape.rank());
        ctx.set_output_type(0, TensorType{DType::kInt64, Shape{end - start}});
      })
      .doc("The input's sizes as a 1-D i64 tensor: dims [start, end), negative counting from the back");
  registry.add(std::move(shape));

  OpSchema reshape("Reshape");
  reshape.input("data", "T")
      .input("shape", "I")
      .output("reshaped", "T")
      .type_constraint("T", kAnyType)
      .type_constraint("I", {DType::kInt64})
      .attr("allowzero", AttrType::kInt, Attribute(0))
      .traits(OpTrait::kInplaceable | OpTrait::kViewOfInput)
      .infer(infer_reshape)
      .gradient(view_gradient)
      .doc("The same elements in a new shape: 0 copies the input's dim (unless allowzero), -1 is inferred");
  registry.add(std::move(reshape));

  OpSchema transpose("Transpose");
  transpose.input("data", "T")
      .output("transposed", "T")
      .type_constraint("T", kAnyType)
      .attr("perm", AttrType::kInts)
      .infer(infer_transpose)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        int64_t rank = ctx.node().input(0)->shape().rank();
        std::vector<int64_t> perm;
        if (ctx.node().has_attr("perm")) {
          perm = ctx.node().attr("perm").ints();
        } else {
          for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
        }
        std::vector<int64_t> inverse(perm.size());
        for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
        ctx.set_input_grad(0, ctx.emit("Transpose", {grad}, 1, {{"perm", Attribute(inverse)}})[0]);
      })
      .doc("Permutes the axes: output axis i is input axis perm[i]; perm defaults to reversing them");
  registry.add(std::move(transpose));
}

}  // namespace weir
