#include "ops/nn/softmax_schemas.h"

#include "core/graph.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {

// Y = softmax(X) or log_softmax(X): one backward op reading dY and Y.
GradientFn softmax_gradient(const char* backward_op) {
  return [backward_op](GradientContext& ctx) {
    Value* grad = ctx.output_grad(0);
    if (grad == nullptr) return;
    int64_t axis = ctx.node().has_attr("axis") ? ctx.node().attr("axis").i() : -1;
    ctx.set_input_grad(0, ctx.emit(backward_op, {grad, ctx.node().output(0)}, 1, {{"axis", Attribute(axis)}})[0]);
  };
}

void infer_along_axis(InferenceContext& ctx) {
  const TensorType* input = ctx.input_type(0);
  if (input == nullptr) return;
  if (input->shape.has_rank()) normalize_axis(ctx.attr_int("axis"), input->shape.rank(), ctx);
  ctx.set_output_type(0, *input);
}

OpSchema softmax_like(const char* name, const char* doc) {
  OpSchema schema(name);
  schema.input("input", "T")
      .output("output", "T")
      .type_constraint("T", {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
      .attr("axis", AttrType::kInt, Attribute(-1))
      .infer(infer_along_axis)
      .doc(doc);
  schema.add_traits(OpTrait::kFullPrecisionCompute);
  return schema;
}

OpSchema softmax_grad(const char* name, const char* doc) {
  OpSchema schema(name);
  schema.input("dY", "T")
      .input("Y", "T")
      .output("dX", "T")
      .type_constraint("T", {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16})
      .attr("axis", AttrType::kInt, Attribute(-1))
      .infer(infer_along_axis)
      .doc(doc);
  return schema;
}

}  // namespace

void register_softmax_schemas(OpRegistry& registry) {
  registry.add(softmax_like("Softmax", "exp(x - max) / sum(exp(x - max)) along `axis`")
                   .gradient(softmax_gradient("SoftmaxGrad")));
  registry.add(softmax_like("LogSoftmax", "log(Softmax(x)) along `axis`, computed stably")
                   .gradient(softmax_gradient("LogSoftmaxGrad")));
  registry.add(softmax_grad("SoftmaxGrad", "Y * (dY - sum(dY * Y)) along `axis`: the gradient of Softmax"));
  registry.add(softmax_grad("LogSoftmaxGrad", "dY - exp(Y) * sum(dY) along `axis`: the gradient of LogSoftmax"));
}

}  // namespace weir
