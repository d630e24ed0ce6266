#include "ops/reduce/along_axis_schemas.h"

#include "core/graph.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {


int64_t int_attr(const InferenceContext& ctx, const char* name, int64_t fallback) {
  return ctx.has_attr(name) ? ctx.attr_int(name) : fallback;
}

void infer_arg_extremum(InferenceContext& ctx) {
  const TensorType* data = ctx.input_type(0);
  if (data == nullptr) return;
  if (!data->shape.has_rank()) {
    ctx.set_output_type(0, {DType::kInt64, Shape::unknown_rank()});
    return;
  }
  int64_t axis = normalize_axis(int_attr(ctx, "axis", 0), data->shape.rank(), ctx);
  std::vector<Dim> dims = data->shape.dims();
  if (int_attr(ctx, "keepdims", 1) != 0) dims[static_cast<size_t>(axis)] = Dim(1);
  else dims.erase(dims.begin() + axis);
  ctx.set_output_type(0, {DType::kInt64, Shape(std::move(dims))});
}

void infer_top_k(InferenceContext& ctx) {
  const TensorType* x = ctx.input_type(0);
  if (x == nullptr) return;
  if (!x->shape.has_rank()) {
    ctx.set_output_type(0, {x->dtype, Shape::unknown_rank()});
    ctx.set_output_type(1, {DType::kInt64, Shape::unknown_rank()});
    return;
  }
  auto axis = static_cast<size_t>(normalize_axis(int_attr(ctx, "axis", -1), x->shape.rank(), ctx));
  std::vector<Dim> dims = x->shape.dims();
  dims[axis] = symbolic_dim(ctx, axis);
  if (auto k = constant_ints(ctx, 1)) {
    if (k->size() != 1 || (*k)[0] < 0) ctx.fail("K must hold one non-negative value, got " + format_sizes(*k));
    const Dim& along = x->shape[axis];
    if (along.is_static() && (*k)[0] > along.size()) {
      ctx.fail("K = " + std::to_string((*k)[0]) + " exceeds axis " + std::to_string(axis) + " of " + x->shape.to_string());
    }
    dims[axis] = Dim((*k)[0]);
  }
  ctx.set_output_type(0, {x->dtype, Shape(dims)});
  ctx.set_output_type(1, {DType::kInt64, Shape(std::move(dims))});
}

OpSchema arg_extremum(const char* name, const char* doc) {
  OpSchema schema(name);
  schema.input("data", "T").output("reduced", "I")
      .type_constraint("T", kNumericDTypes).type_constraint("I", {DType::kInt64})
      .attr("axis", AttrType::kInt, Attribute(int64_t{0}))
      .attr("keepdims", AttrType::kInt, Attribute(int64_t{1}))
      .attr("select_last_index", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_arg_extremum)
      .doc(doc);
  return schema;
}

}  // namespace

void register_along_axis_schemas(OpRegistry& registry) {
  registry.add(arg_extremum("ArgMax", "index (i64) of the largest element along `axis`: the first of ties, or the "
                                      "last with select_last_index; NaN counts as the largest"));
  registry.add(arg_extremum("ArgMin", "index (i64) of the smallest element along `axis`: the first of ties, or the "
                                      "last with select_last_index; NaN counts as the smallest"));

  OpSchema cumsum("CumSum");
  cumsum.input("x", "T").input("axis", "I").output("y", "T")
      .type_constraint("T", {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt32,
                             DType::kInt64})
      .type_constraint("I", {DType::kInt32, DType::kInt64})
      .attr("exclusive", AttrType::kInt, Attribute(int64_t{0}))
      .attr("reverse", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_same_as_input)
      .gradient([](GradientContext& ctx) {
        // Each x[j] feeds the sums after it (before it when reversed): the
        // gradient sums dY the other way, with the same exclusivity.
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        int64_t reverse = node.has_attr("reverse") ? node.attr("reverse").i() : 0;
        int64_t exclusive = node.has_attr("exclusive") ? node.attr("exclusive").i() : 0;
        ctx.set_input_grad(0, ctx.emit("CumSum", {grad, node.input(1)}, 1,
                                       {{"exclusive", Attribute(exclusive)}, {"reverse", Attribute(int64_t{reverse == 0})}})[0]);
      })
      .doc("running sums along the axis given by the scalar input `axis`; exclusive leaves out the element "
           "itself, reverse sums from the end");
  registry.add(std::move(cumsum));

  OpSchema top_k("TopK");
  top_k.input("X", "T").input("K", "I").output("Values", "T").output("Indices", "I")
      .type_constraint("T", kNumericDTypes).type_constraint("I", {DType::kInt64})
      .attr("axis", AttrType::kInt, Attribute(int64_t{-1}))
      .attr("largest", AttrType::kInt, Attribute(int64_t{1}))
      .attr("sorted", AttrType::kInt, Attribute(int64_t{1}))
      .infer(infer_top_k)
      .gradient([](GradientContext& ctx) {
        // Each chosen element gets its dValues; the indices along a line are distinct.
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        const Node& node = ctx.node();
        int64_t axis = node.has_attr("axis") ? node.attr("axis").i() : -1;
        Value* zeros = ctx.emit("ZerosLike", {node.input(0)})[0];
        ctx.set_input_grad(0, ctx.emit("ScatterElements", {zeros, node.output(1), grad}, 1, {{"axis", Attribute(axis)}})[0]);
      })
      .doc("the K largest (or smallest) elements along `axis` and their i64 indices, ordered best first; "
           "equal values keep their index order; NaN counts as the largest");
  registry.add(std::move(top_k));
}

}  // namespace weir
