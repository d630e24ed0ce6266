#include "ops/elementwise/logic_schemas.h"

#include "core/graph.h"
#include "ops/dtype_sets.h"
#include "ops/gradient_util.h"
#include "ops/shape_inference.h"

namespace weir {

namespace {


OpSchema bool_result(const char* name, const std::vector<DType>& inputs, OpTrait traits, const char* doc) {
  OpSchema schema(name);
  schema.input("A", "T")
      .input("B", "T")
      .output("C", "B")
      .type_constraint("T", inputs)
      .type_constraint("B", {DType::kBool})
      .traits(OpTrait::kElementwise | traits)
      .infer([](InferenceContext& ctx) {
        const TensorType* a = ctx.input_type(0);
        const TensorType* b = ctx.input_type(1);
        if (a != nullptr && b != nullptr) ctx.set_output_type(0, TensorType{DType::kBool, broadcast_shapes(a->shape, b->shape, ctx)});
      })
      .gradient([](GradientContext&) {})  // piecewise constant: no gradient flows
      .doc(doc);
  return schema;
}

// dX = Where(c, dY, 0) and dY = Where(c, 0, dY), each summed to its input's shape.
void where_gradient(GradientContext& ctx) {
  Value* grad = ctx.output_grad(0);
  if (grad == nullptr) return;
  const Node& node = ctx.node();
  Value* zero = scalar_constant(ctx.graph(), node.output(0)->dtype(), 0.0, node.name() + "_zero");
  Value* condition = node.input(0);
  const Shape& out = node.output(0)->shape();
  auto broadcast = [&](size_t index) { return !(node.input(index)->shape().has_rank() && node.input(index)->shape() == out); };
  ctx.set_input_grad(1, sum_to_input_shape(ctx, ctx.emit("Where", {condition, grad, zero})[0], 1, broadcast(1)));
  ctx.set_input_grad(2, sum_to_input_shape(ctx, ctx.emit("Where", {condition, zero, grad})[0], 2, broadcast(2)));
}

}  // namespace

void register_logic_schemas(OpRegistry& registry) {
  std::vector<DType> comparable = kNumericDTypes;
  comparable.push_back(DType::kBool);
  registry.add(bool_result("Equal", comparable, OpTrait::kCommutative, "A == B"));
  registry.add(bool_result("Less", kNumericDTypes, OpTrait::kNone, "A < B"));
  registry.add(bool_result("Greater", kNumericDTypes, OpTrait::kNone, "A > B"));
  registry.add(bool_result("LessOrEqual", kNumericDTypes, OpTrait::kNone, "A <= B"));
  registry.add(bool_result("GreaterOrEqual", kNumericDTypes, OpTrait::kNone, "A >= B"));
  registry.add(bool_result("And", {DType::kBool}, OpTrait::kCommutative, "A and B"));
  registry.add(bool_result("Or", {DType::kBool}, OpTrait::kCommutative, "A or B"));
  registry.add(bool_result("Xor", {DType::kBool}, OpTrait::kCommutative, "A xor B"));

  OpSchema logical_not("Not");
  logical_not.input("X", "B")
      .output("Y", "B")
      .type_constraint("B", {DType::kBool})
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable)
      .infer(infer_same_as_input)
      .gradient([](GradientContext&) {})
      .doc("not X");
  registry.add(std::move(logical_not));

  std::vector<DType> any(std::begin(kAllDTypes), std::end(kAllDTypes));
  OpSchema where("Where");
  where.input("condition", "B")
      .input("X", "T")
      .input("Y", "T")
      .output("output", "T")
      .type_constraint("B", {DType::kBool})
      .type_constraint("T", any)
      .traits(OpTrait::kElementwise)
      .infer([](InferenceContext& ctx) {
        const TensorType* c = ctx.input_type(0);
        const TensorType* x = ctx.input_type(1);
        const TensorType* y = ctx.input_type(2);
        if (c == nullptr || x == nullptr || y == nullptr) return;
        ctx.set_output_type(0, TensorType{x->dtype, broadcast_shapes(broadcast_shapes(c->shape, x->shape, ctx), y->shape, ctx)});
      })
      .gradient(where_gradient)
      .doc("X where condition, else Y; all three broadcast together");
  registry.add(std::move(where));
}

}  // namespace weir
