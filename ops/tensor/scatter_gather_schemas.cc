#include "ops/tensor/scatter_gather_schemas.h"

#include "core/error.h"
#include "core/graph.h"
#include "ops/dtype_sets.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

const std::vector<DType> kIndexTypes = {DType::kInt32, DType::kInt64};

std::string reduction_of(const Node& node) { return node.has_attr("reduction") ? node.attr("reduction").s() : "none"; }

void check_reduction(InferenceContext& ctx) {
  std::string reduction = reduction_of(ctx.node());
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    ctx.fail("reduction '" + reduction + "' is not one of none, add, mul, max, min");
  }
}

void infer_gather_nd(InferenceContext& ctx) {
  const TensorType* data = ctx.input_type(0);
  const TensorType* indices = ctx.input_type(1);
  if (data == nullptr || indices == nullptr) return;
  int64_t batch = ctx.has_attr("batch_dims") ? ctx.attr_int("batch_dims") : 0;
  if (!data->shape.has_rank() || !indices->shape.has_rank() || indices->shape.rank() == 0 ||
      !indices->shape.dims().back().is_static()) {
    ctx.set_output_type(0, {data->dtype, Shape::unknown_rank()});
    return;
  }
  int64_t k = indices->shape.dims().back().size();
  int64_t q = indices->shape.rank(), r = data->shape.rank();
  if (batch < 0 || batch >= std::min(q, r) || batch + k > r) {
    ctx.fail("batch_dims " + std::to_string(batch) + " and index tuples of " + std::to_string(k) + " do not fit data " +
             data->shape.to_string() + " and indices " + indices->shape.to_string());
  }
  std::vector<Dim> dims(indices->shape.dims().begin(), indices->shape.dims().end() - 1);
  dims.insert(dims.end(), data->shape.dims().begin() + batch + k, data->shape.dims().end());
  ctx.set_output_type(0, {data->dtype, Shape(std::move(dims))});
}

void infer_like_input(InferenceContext& ctx, size_t input) {
  const TensorType* type = ctx.input_type(input);
  if (type != nullptr) ctx.set_output_type(0, *type);
}

// Scatter rules: updates land on data (none: overwriting; add: summing).
// dData is dY with the overwritten positions zeroed (none) or dY itself
// (add); dUpdates is dY gathered at the indices. mul/max/min get no rule.
GradientFn scatter_gradient(const char* gather_op, const char* scatter_op) {
  return [gather_op, scatter_op](GradientContext& ctx) {
    Value* grad = ctx.output_grad(0);
    if (grad == nullptr) return;
    const Node& node = ctx.node();
    std::string reduction = reduction_of(node);
    if (reduction != "none" && reduction != "add") {
      throw Error(ErrorKind::kUnsupported, node.op_type() + " '" + node.name() + "': no gradient for reduction '" +
                                               reduction + "'").with_node(node.name());
    }
    std::map<std::string, Attribute> axis;
    if (node.has_attr("axis")) axis.emplace("axis", node.attr("axis"));
    Value* indices = node.input(1);
    if (reduction == "none") {
      Value* zeros = ctx.emit("ZerosLike", {node.input(2)})[0];
      ctx.set_input_grad(0, ctx.emit(scatter_op, {grad, indices, zeros}, 1, axis)[0]);
    } else {
      ctx.set_input_grad(0, grad);
    }
    ctx.set_input_grad(2, ctx.emit(gather_op, {grad, indices}, 1, axis)[0]);
  };
}

}  // namespace

void register_scatter_gather_schemas(OpRegistry& registry) {
  OpSchema gather_elements("GatherElements");
  gather_elements.input("data", "T").input("indices", "I").output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", kIndexTypes)
      .attr("axis", AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        const TensorType* data = ctx.input_type(0);
        const TensorType* indices = ctx.input_type(1);
        if (data == nullptr || indices == nullptr) return;
        if (data->shape.has_rank() && indices->shape.has_rank()) {
          if (data->shape.rank() != indices->shape.rank()) {
            ctx.fail("indices " + indices->shape.to_string() + " must have the rank of data " + data->shape.to_string());
          }
          normalize_axis(ctx.has_attr("axis") ? ctx.attr_int("axis") : 0, data->shape.rank(), ctx);
        }
        ctx.set_output_type(0, {data->dtype, indices->shape});
      })
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        std::map<std::string, Attribute> attributes = {{"reduction", Attribute(std::string("add"))}};
        if (ctx.node().has_attr("axis")) attributes.emplace("axis", ctx.node().attr("axis"));
        Value* zeros = ctx.emit("ZerosLike", {ctx.node().input(0)})[0];
        ctx.set_input_grad(0, ctx.emit("ScatterElements", {zeros, ctx.node().input(1), grad}, 1, attributes)[0]);
      })
      .doc("output[i][j][k] = data[indices[i][j][k]][j][k] for axis 0 (likewise for other axes); shaped like indices");
  registry.add(std::move(gather_elements));

  OpSchema scatter_elements("ScatterElements");
  scatter_elements.input("data", "T").input("indices", "I").input("updates", "T").output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", kIndexTypes)
      .attr("axis", AttrType::kInt, Attribute(int64_t{0}))
      .attr("reduction", AttrType::kString, Attribute(std::string("none")))
      .infer([](InferenceContext& ctx) {
        check_reduction(ctx);
        const TensorType* indices = ctx.input_type(1);
        const TensorType* updates = ctx.input_type(2);
        if (indices != nullptr && updates != nullptr && indices->shape.is_static() && updates->shape.is_static() &&
            indices->shape.sizes() != updates->shape.sizes()) {
          ctx.fail("updates " + updates->shape.to_string() + " must be shaped like indices " + indices->shape.to_string());
        }
        infer_like_input(ctx, 0);
      })
      .gradient(scatter_gradient("GatherElements", "ScatterElements"))
      .doc("a copy of data with updates written (or combined by `reduction`) at the positions indices name "
           "along `axis`; repeated positions with reduction none keep the last update");
  registry.add(std::move(scatter_elements));

  OpSchema gather_nd("GatherND");
  gather_nd.input("data", "T").input("indices", "I").output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .attr("batch_dims", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_gather_nd)
      .gradient([](GradientContext& ctx) {
        Value* grad = ctx.output_grad(0);
        if (grad == nullptr) return;
        ctx.set_input_grad(0, ctx.emit("GatherNDGrad", {grad, ctx.node().input(0), ctx.node().input(1)}, 1,
                                       ctx.node().attributes())[0]);
      })
      .doc("the slices of data named by the index tuples in the last axis of indices (after `batch_dims` "
           "shared leading axes)");
  registry.add(std::move(gather_nd));

  OpSchema gather_nd_grad("GatherNDGrad");
  gather_nd_grad.input("dY", "T").input("data", "").input("indices", "I").output("dX", "T")
      .type_constraint("T", kNumericDTypes).type_constraint("I", {DType::kInt64})
      .attr("batch_dims", AttrType::kInt, Attribute(int64_t{0}))
      .infer(infer_gradient_like_input_1)
      .doc("zeros shaped like data with each slice of dY added where GatherND read it: the gradient of GatherND");
  registry.add(std::move(gather_nd_grad));

  OpSchema scatter_nd("ScatterND");
  scatter_nd.input("data", "T").input("indices", "I").input("updates", "T").output("output", "T")
      .type_constraint("T", kAnyDTypes).type_constraint("I", {DType::kInt64})
      .attr("reduction", AttrType::kString, Attribute(std::string("none")))
      .infer([](InferenceContext& ctx) {
        check_reduction(ctx);
        infer_like_input(ctx, 0);
      })
      .gradient(scatter_gradient("GatherND", "ScatterND"))
      .doc("a copy of data with each slice of updates written (or combined by `reduction`) at the index tuple "
           "in the last axis of indices");
  registry.add(std::move(scatter_nd));
}

}  // namespace weir
