// Op schemas: registry lookups and the shape/dtype inference of the first
// op families (broadcasting, MatMul, Gemm, Softmax).
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/op_schema.h"
#include "ops/register_ops.h"

namespace weir {
namespace {

TensorType f32(Shape shape) { return {DType::kFloat32, std::move(shape)}; }

// Infers the single output type of `op_type` applied to inputs of `types`.
TensorType infer(const std::string& op_type, const std::vector<TensorType>& types,
                 std::map<std::string, Attribute> attributes = {}) {
  Graph g("g");
  std::vector<Value*> inputs;
  for (size_t i = 0; i < types.size(); ++i) inputs.push_back(g.add_input("in" + std::to_string(i), types[i]));
  Node* node = g.add_node(op_type, inputs, 1, std::move(attributes), "node");
  return infer_output_types(*node, default_op_registry().get(op_type)).at(0);
}

TEST(OpRegistry, FindsSchemasAndRefusesDuplicates) {
  const OpRegistry& registry = default_op_registry();
  ASSERT_NE(registry.find("Add"), nullptr);
  EXPECT_TRUE(registry.get("Add").has(OpTrait::kCommutative));
  EXPECT_TRUE(registry.get("Relu").has(OpTrait::kElementwise));
  EXPECT_FALSE(registry.get("Sub").has(OpTrait::kCommutative));
  EXPECT_EQ(registry.find("Nope"), nullptr);
  EXPECT_THROW(registry.get("Nope"), Error);
  EXPECT_EQ(registry.get("Gemm").min_inputs(), 2u);
  EXPECT_EQ(registry.get("Gemm").max_inputs(), 3u);

  OpRegistry fresh;
  register_all_ops(fresh);
  EXPECT_EQ(fresh.size(), registry.size());
  EXPECT_THROW(register_all_ops(fresh), Error);
  EXPECT_THROW(OpSchema("Bad").attr("x", AttrType::kInt, Attribute("text")), Error);
}

TEST(ShapeInference, BroadcastingFollowsNumPyAndKeepsSymbols) {
  EXPECT_EQ(infer("Add", {f32(Shape{2, 1, 4}), f32(Shape{3, 1})}).shape, (Shape{2, 3, 4}));
  EXPECT_EQ(infer("Mul", {f32(Shape{Dim::symbol("N"), 4}), f32(Shape{4})}).shape, (Shape{Dim::symbol("N"), 4}));
  EXPECT_EQ(infer("Sub", {f32(Shape{Dim::symbol("N"), 1}), f32(Shape{1, 5})}).shape, (Shape{Dim::symbol("N"), 5}));
  EXPECT_EQ(infer("Div", {f32(Shape{}), f32(Shape{7})}).shape, (Shape{7}));
  EXPECT_FALSE(infer("Add", {f32(Shape::unknown_rank()), f32(Shape{7})}).shape.has_rank());
  try {
    infer("Add", {f32(Shape{2, 3}), f32(Shape{4})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShape);
    EXPECT_EQ(e.node(), "node");
    EXPECT_NE(std::string(e.what()).find("cannot broadcast [2,3] with [4]"), std::string::npos) << e.what();
  }
}

TEST(ShapeInference, MatMulBatchesBroadcastsAndPromotesVectors) {
  EXPECT_EQ(infer("MatMul", {f32(Shape{2, 3}), f32(Shape{3, 5})}).shape, (Shape{2, 5}));
  EXPECT_EQ(infer("MatMul", {f32(Shape{7, 1, 2, 3}), f32(Shape{4, 3, 5})}).shape, (Shape{7, 4, 2, 5}));
  EXPECT_EQ(infer("MatMul", {f32(Shape{3}), f32(Shape{3, 5})}).shape, (Shape{5}));
  EXPECT_EQ(infer("MatMul", {f32(Shape{2, 3}), f32(Shape{3})}).shape, (Shape{2}));
  EXPECT_EQ(infer("MatMul", {f32(Shape{3}), f32(Shape{3})}).shape, (Shape{}));
  EXPECT_EQ(infer("MatMul", {f32(Shape{Dim::symbol("B"), 2, 3}), f32(Shape{3, Dim::symbol("K")})}).shape,
            (Shape{Dim::symbol("B"), 2, Dim::symbol("K")}));
  EXPECT_THROW(infer("MatMul", {f32(Shape{2, 3}), f32(Shape{4, 5})}), Error);
  EXPECT_THROW(infer("MatMul", {f32(Shape{}), f32(Shape{4, 5})}), Error);
}

TEST(ShapeInference, GemmHonoursTransposesAndChecksC) {
  EXPECT_EQ(infer("Gemm", {f32(Shape{3, 2}), f32(Shape{5, 3})}, {{"transA", Attribute(1)}, {"transB", Attribute(1)}}).shape,
            (Shape{2, 5}));
  EXPECT_EQ(infer("Gemm", {f32(Shape{2, 3}), f32(Shape{3, 5}), f32(Shape{5})}).shape, (Shape{2, 5}));
  EXPECT_THROW(infer("Gemm", {f32(Shape{2, 3}), f32(Shape{3, 5}), f32(Shape{4})}), Error);
  EXPECT_THROW(infer("Gemm", {f32(Shape{2, 3}), f32(Shape{2, 5})}), Error);
  EXPECT_THROW(infer("Gemm", {f32(Shape{2, 3, 1}), f32(Shape{3, 5})}), Error);
}

TEST(ShapeInference, SoftmaxChecksItsAxis) {
  EXPECT_EQ(infer("Softmax", {f32(Shape{2, 3})}).shape, (Shape{2, 3}));
  EXPECT_EQ(infer("LogSoftmax", {f32(Shape{2, 3})}, {{"axis", Attribute(-2)}}).shape, (Shape{2, 3}));
  EXPECT_THROW(infer("Softmax", {f32(Shape{2, 3})}, {{"axis", Attribute(2)}}), Error);
}

TEST(ShapeInference, UnaryOpsKeepTheInputType) {
  TensorType bf16{DType::kBFloat16, Shape{Dim::symbol("N"), 8}};
  EXPECT_EQ(infer("Tanh", {bf16}), bf16);
  EXPECT_EQ(infer("Identity", {TensorType{DType::kBool, Shape{3}}}).dtype, DType::kBool);
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// Conv and pool sizes come from model and plan files: attributes or input
// sizes past 2^30 per axis are refused by name, before arithmetic on them can
// overflow (a stride of 2^62 once wrapped the output size).
TEST(ShapeInference, ConvAndPoolGeometryRefusesHugeNumbers) {
  auto error_of = [](const std::string& op, const std::vector<TensorType>& types,
                     std::map<std::string, Attribute> attributes) -> std::string {
    try {
      infer(op, types, std::move(attributes));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kShape) << e.what();
      return e.what();
    }
    return "";
  };
  const TensorType x = f32(Shape{1, 1, 8, 8});
  const TensorType w = f32(Shape{1, 1, 3, 3});
  const int64_t big = int64_t{1} << 62;
  EXPECT_NE(error_of("Conv", {x, w}, {{"strides", Attribute(std::vector<int64_t>{big, 1})}}).find("strides [4611686018427387904,1] exceeds"),
            std::string::npos);
  EXPECT_NE(error_of("Conv", {x, w}, {{"dilations", Attribute(std::vector<int64_t>{1, big})}}).find("dilations"),
            std::string::npos);
  EXPECT_NE(error_of("Conv", {x, w}, {{"pads", Attribute(std::vector<int64_t>{big, 0, big, 0})}}).find("pads"),
            std::string::npos);
  EXPECT_NE(error_of("Conv", {f32(Shape{1, 1, big, 8}), w}, {}).find("input spatial sizes"), std::string::npos);
  EXPECT_NE(error_of("ConvTranspose", {x, w}, {{"output_shape", Attribute(std::vector<int64_t>{big, 8})}}).find("output_shape"),
            std::string::npos);
  EXPECT_NE(error_of("MaxPool", {x}, {{"kernel_shape", Attribute(std::vector<int64_t>{2, 2})},
                                      {"strides", Attribute(std::vector<int64_t>{big, big})}}).find("strides"),
            std::string::npos);
  // Within the limit, inference still works.
  EXPECT_EQ(infer("Conv", {x, w}, {{"strides", Attribute(std::vector<int64_t>{2, 2})}}).shape, (Shape{1, 1, 3, 3}));
}

// Flatten multiplies the dims on each side of its axis, which come from the
// model (the plan fuzzer's finding: 8 * 1152921504606846984 overflowed).
TEST(ShapeInference, FlattenRefusesDimsWhoseProductOverflows) {
  const int64_t big = int64_t{1} << 60;
  try {
    infer("Flatten", {f32(Shape{8, big, 2})}, {{"axis", Attribute(int64_t{2})}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShape) << e.what();
    EXPECT_NE(std::string(e.what()).find("overflows int64"), std::string::npos) << e.what();
  }
  EXPECT_EQ(infer("Flatten", {f32(Shape{8, big, 2})}, {{"axis", Attribute(int64_t{1})}}).shape, (Shape{8, 2 * big}));
}

// Reshape's -1 entry divides the element count by the product of the other
// entries, which come from the model (the ONNX fuzzer's finding:
// 270479860432897 * 131327 overflowed).
TEST(ShapeInference, ReshapeRefusesEntriesWhoseProductOverflows) {
  Graph g("g");
  Value* x = g.add_input("x", f32(Shape{2, 3}));
  for (const std::vector<int64_t>& entries :
       {std::vector<int64_t>{-1, 270479860432897, 131327}, std::vector<int64_t>{int64_t{1} << 62, 4, -1}}) {
    Value* shape = g.add_constant(g.unique_name("shape"), Tensor::from_vector(entries, {3}));
    Node* node = g.add_node("Reshape", {x, shape}, 1, {}, g.unique_name("reshape"));
    try {
      infer_output_types(*node, default_op_registry().get("Reshape"));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kShape) << e.what();
      EXPECT_NE(std::string(e.what()).find("product does not fit 64 bits"), std::string::npos) << e.what();
    }
  }
  Value* shape = g.add_constant("fine", Tensor::from_vector(std::vector<int64_t>{3, -1}, {2}));
  Node* node = g.add_node("Reshape", {x, shape}, 1, {}, "fine_reshape");
  EXPECT_EQ(infer_output_types(*node, default_op_registry().get("Reshape")).at(0).shape, (Shape{3, 2}));
}

}  // namespace
}  // namespace weir
