// The graph builder: typed handles, scoped names, and the first error kept
// with the offending call while later calls become no-ops.
#include <gtest/gtest.h>

#include "core/error.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/nn/functional.h"
#include "frontend/nn/init.h"
#include "frontend/nn/layers.h"

namespace weir {
namespace {

TEST(GraphBuilder, InfersTypesAtEachCallAndScopesNames) {
  GraphBuilder b("mlp", 3);
  Var x = b.input("x", {DType::kFloat32, Shape{8, 20}});
  Var y;
  {
    auto scope = b.scope("encoder");
    nn::Linear fc(b, "fc", 20, 6);
    EXPECT_EQ(fc.weight.name(), "encoder/fc/weight");
    y = nn::relu(fc(x));
  }
  EXPECT_EQ(y.shape(), (Shape{8, 6}));
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  b.output(y);
  std::unique_ptr<Graph> graph = b.finish();
  EXPECT_EQ(graph->outputs().size(), 1u);
  EXPECT_NE(graph->find_value("encoder/fc/bias"), nullptr);
}

TEST(GraphBuilder, KeepsTheFirstErrorWithTheOffendingCall) {
  GraphBuilder b("bad", 3);
  Var x = b.input("x", {DType::kFloat32, Shape{8, 20}});
  Var w = b.parameter("w", init::zeros({21, 4}));
  Var y = nn::matmul(x, w);  // 20 != 21: the first error
  EXPECT_FALSE(y.valid());
  EXPECT_FALSE(b.ok());
  Var z = b.op("NoSuchOp", {x});  // a later error is not reported over the first
  EXPECT_FALSE(z.valid());
  b.output(nn::relu(y));
  try {
    b.finish();
    FAIL() << "finish() accepted a failed build";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("MatMul"), std::string::npos) << message;
    EXPECT_NE(message.find("x: f32[8,20]"), std::string::npos) << message;
    EXPECT_NE(message.find("w: f32[21,4]"), std::string::npos) << message;
    EXPECT_EQ(message.find("NoSuchOp"), std::string::npos) << message;
  }
}

TEST(GraphBuilder, UnknownOpsAndBadLayerArgumentsAreErrors) {
  {
    GraphBuilder b("bad", 3);
    Var x = b.input("x", {DType::kFloat32, Shape{2}});
    b.op("Frobnicate", {x});
    ASSERT_TRUE(b.error().has_value());
    EXPECT_NE(std::string(b.error()->what()).find("unknown op 'Frobnicate'"), std::string::npos);
  }
  {
    GraphBuilder b("bad", 3);
    nn::MultiHeadAttention attention(b, "attn", 10, 3);
    ASSERT_TRUE(b.error().has_value());
    EXPECT_NE(std::string(b.error()->what()).find("not a multiple of 3 heads"), std::string::npos);
  }
  {
    GraphBuilder b("bad", 3);
    b.input("x", {DType::kFloat32, Shape{2}});
    b.input("x", {DType::kFloat32, Shape{2}});  // duplicate name
    EXPECT_FALSE(b.ok());
  }
}

TEST(GraphBuilder, TheSameSeedGivesTheSameParameters) {
  auto build = [](uint64_t seed) {
    GraphBuilder b("m", seed);
    nn::Conv2d conv(b, "conv", {.in_channels = 3, .out_channels = 4, .kernel = 3});
    return conv.weight.value()->data().clone();
  };
  EXPECT_TRUE(build(5).bitwise_equal(build(5)));
  EXPECT_FALSE(build(5).bitwise_equal(build(6)));
  // Kaiming-uniform bound for fan-in 27: 1/sqrt(27).
  Tensor w = build(5);
  float bound = 1.0f / std::sqrt(27.0f);
  for (int64_t i = 0; i < w.num_elements(); ++i) EXPECT_LE(std::abs(w.data<float>()[i]), bound);
}

TEST(GraphBuilder, LayersBuildTheExpectedShapes) {
  GraphBuilder b("layers", 1);
  Var image = b.input("image", {DType::kFloat32, Shape{2, 3, 8, 8}});
  nn::Conv2d conv(b, "conv", {.in_channels = 3, .out_channels = 4, .kernel = 3, .stride = 2, .padding = 1});
  nn::BatchNorm2d bn(b, "bn", 4, /*training=*/true);
  Var h = nn::max_pool2d(nn::relu(bn(conv(image))), 2, 2);
  EXPECT_EQ(h.shape(), (Shape{2, 4, 2, 2}));
  Var ids = b.input("ids", {DType::kInt64, Shape{2, 5}});
  nn::Embedding embed(b, "embed", 11, 8);
  nn::MultiHeadAttention attention(b, "attn", 8, 2);
  nn::LayerNorm norm(b, "norm", 8);
  Var t = norm(attention(embed(ids)));
  EXPECT_EQ(t.shape(), (Shape{2, 5, 8}));
  b.output(h);
  b.output(t);
  EXPECT_NO_THROW(b.finish());
}

}  // namespace
}  // namespace weir
