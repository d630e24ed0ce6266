// Schemas of the backward ops that the elementwise gradient rules emit.
#include "ops/elementwise/elementwise_schemas.h"
#include "ops/shape_inference.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

const std::vector<DType> kGradTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

OpSchema activation_grad(const char* name, const char* saved, const char* doc) {
  OpSchema schema(name);
  schema.input("dY", "T")
      .input(saved, "T")
      .output("dX", "T")
      .type_constraint("T", kGradTypes)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable)
      .infer(infer_same_as_input)
      .doc(doc);
  return schema;
}

}  // namespace

void register_elementwise_backward_schemas(OpRegistry& registry) {
  registry.add(activation_grad("ReluGrad", "X", "dY where X > 0, else 0"));
  registry.add(activation_grad("SigmoidGrad", "Y", "dY * Y * (1 - Y), Y the Sigmoid output"));
  registry.add(activation_grad("TanhGrad", "Y", "dY * (1 - Y^2), Y the Tanh output"));

  OpSchema sum_to_shape("SumToShape");
  sum_to_shape.input("X", "T")
      .input("Reference", "")
      .output("Y", "")
      .type_constraint("T", kGradTypes)
      .attr(kOutputDtypeAttr, AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        const TensorType* x = ctx.input_type(0);
        const TensorType* reference = ctx.input_type(1);
        if (x == nullptr || reference == nullptr) return;
        if (x->shape.has_rank() && reference->shape.has_rank()) {
          // The reference must broadcast to X; what it broadcasts to must be X.
          Shape broadcast = broadcast_shapes(x->shape, reference->shape, ctx);
          if (broadcast.rank() != x->shape.rank()) {
            ctx.fail("reference shape " + reference->shape.to_string() + " does not broadcast to " +
                     x->shape.to_string());
          }
        }
        ctx.set_output_type(0, TensorType{inferred_output_dtype(ctx, x->dtype), reference->shape});
      })
      .doc("X summed over the axes along which Reference's shape broadcasts to X's: the gradient of a "
           "broadcast input. Only Reference's shape is read. output_dtype f32 sums bf16/f16 into f32.");
  registry.add(std::move(sum_to_shape));
}

}  // namespace weir
