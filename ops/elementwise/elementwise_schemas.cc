#include "ops/elementwise/elementwise_schemas.h"

#include "ops/shape_inference.h"

namespace weir {

namespace {

const std::vector<DType> kNumeric = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                     DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                     DType::kInt64};
const std::vector<DType> kFloating = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

void infer_broadcast(InferenceContext& ctx) {
  const TensorType* a = ctx.input_type(0);
  const TensorType* b = ctx.input_type(1);
  if (a == nullptr || b == nullptr) return;
  ctx.set_output_type(0, TensorType{a->dtype, broadcast_shapes(a->shape, b->shape, ctx)});
}

OpSchema binary(const char* name, OpTrait extra_traits, const char* doc) {
  OpSchema schema(name);
  schema.input("A", "T")
      .input("B", "T")
      .output("C", "T")
      .type_constraint("T", kNumeric)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable | extra_traits)
      .infer(infer_broadcast)
      .doc(doc);
  return schema;
}

OpSchema unary(const char* name, const std::vector<DType>& types, const char* doc) {
  OpSchema schema(name);
  schema.input("X", "T")
      .output("Y", "T")
      .type_constraint("T", types)
      .traits(OpTrait::kElementwise | OpTrait::kInplaceable)
      .infer(infer_same_as_input)
      .doc(doc);
  return schema;
}

}  // namespace

void register_elementwise_schemas(OpRegistry& registry) {
  registry.add(binary("Add", OpTrait::kCommutative, "A + B, with NumPy broadcasting"));
  registry.add(binary("Sub", OpTrait::kNone, "A - B, with NumPy broadcasting"));
  registry.add(binary("Mul", OpTrait::kCommutative, "A * B, with NumPy broadcasting"));
  registry.add(binary("Div", OpTrait::kNone, "A / B, with NumPy broadcasting; integer division truncates"));
  registry.add(unary("Relu", kNumeric, "max(X, 0)"));
  registry.add(unary("Sigmoid", kFloating, "1 / (1 + exp(-X))"));
  registry.add(unary("Tanh", kFloating, "tanh(X)"));
  OpSchema identity("Identity");
  identity.input("X", "T")
      .output("Y", "T")
      .type_constraint("T", {kAllDTypes, kAllDTypes + std::size(kAllDTypes)})
      .infer(infer_same_as_input)
      .doc("Y = X");
  registry.add(std::move(identity));
}

}  // namespace weir
