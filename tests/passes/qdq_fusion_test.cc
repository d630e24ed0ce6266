// QdqFusion: QDQ graphs (QuantizeLinear/DequantizeLinear around Conv, Conv
// + Relu, MatMul and Gemm) run before and after the pass on the same random
// inputs; the fused graph's integer nodes replace the f32 ones, and its
// outputs are within one output quantization step of the f32 graph's (exact
// integer sums against f32 sums and an i32-rounded bias), on a few elements.
// Patterns the pass must not take stay as they are, and a small quantized
// ResNet block runs through the whole level-3 pipeline (layout pass
// included) with its results kept.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/type_inference.h"
#include "core/verifier.h"
#include "ops/graph_evaluator.h"
#include "ops/register_ops.h"
#include "passes/fusion/qdq_fusion.h"
#include "passes/pass_manager.h"
#include "tests/passes/qdq_graph_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using Ints = std::vector<int64_t>;
using testing::activation_quant;
using testing::ActivationQuant;
using testing::fake_quantize;
using testing::int8_tensor;
using testing::quantized_weight;
using testing::random_input;
using testing::steps_apart;
using testing::Steps;
using testing::zero_point;

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

void finish(Graph& g) {
  infer_graph_types(g, default_op_registry());
  verify_graph(g, default_op_registry());
}

struct ConvCase {
  Ints x, w;
  std::map<std::string, Attribute> attrs;
};

TEST(QdqFusion, ConvBecomesQLinearConvAndMatchesTheQdqGraph) {
  std::mt19937 engine(5);
  std::vector<ConvCase> cases = {
      {{1, 8, 12, 12}, {16, 8, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{2, 8, 9, 9}, {12, 4, 3, 3}, {{"group", Attribute(int64_t{2})}, {"strides", Attribute(Ints{2, 2})}}},
      {{1, 32, 7, 7}, {16, 32, 1, 1}, {}},
  };
  Steps all;
  int variant = 0;
  for (const ConvCase& c : cases) {
    for (DType dtype : {DType::kUInt8, DType::kInt8}) {
      for (int flags = 0; flags < 4; ++flags) {
        bool per_channel = flags & 1, relu = flags & 2, bias = (variant++ % 3) != 2;
        SCOPED_TRACE("case " + std::to_string(variant));
        Graph g("qdq_conv");
        Value* x = g.add_input("x", {DType::kFloat32, Shape::from_sizes(c.x)});
        Value* xd = fake_quantize(g, x, activation_quant(dtype, 1.0f), "x");
        Value* wd = quantized_weight(g, c.w, 0, per_channel, engine, "w");
        std::vector<Value*> inputs = {xd, wd};
        if (bias) inputs.push_back(g.add_constant("b", random_input({c.w[0]}, 9)));
        Value* y = g.add_node("Conv", inputs, 1, c.attrs, "conv")->output(0);
        if (relu) y = g.add_node("Relu", {y}, 1, {}, "relu")->output(0);
        const int64_t depth = c.w[1] * c.w[2] * c.w[3];
        ActivationQuant yq = activation_quant(dtype, 0.015f * std::sqrt(static_cast<float>(depth)));
        g.add_output(fake_quantize(g, y, yq, "y"));
        finish(g);

        auto fused = g.clone();
        PassContext ctx;
        ASSERT_TRUE(QdqFusion().run(*fused, ctx));
        finish(*fused);
        EXPECT_EQ(count_ops(*fused, "Conv"), 0);
        EXPECT_EQ(count_ops(*fused, relu ? "FusedQLinearConv" : "QLinearConv"), 1);
        EXPECT_EQ(count_ops(*fused, "Relu"), 0);
        Tensor input = random_input(c.x, 100 + static_cast<uint32_t>(variant));
        Tensor before = evaluate_graph(g, {{"x", input}})[0], after = evaluate_graph(*fused, {{"x", input}})[0];
        Steps s = steps_apart(before, after, yq.scale);
        EXPECT_LE(s.largest, 1.0 + 1e-3);
        all.largest = std::max(all.largest, s.largest);
        all.apart += s.apart;
        all.total += s.total;
      }
    }
  }
  EXPECT_LT(static_cast<double>(all.apart), 0.02 * static_cast<double>(all.total));
  std::cout << "QDQ conv vs QLinearConv: " << all.apart << " of " << all.total << " elements 1 step apart\n";
}

TEST(QdqFusion, MatMulAndGemmBecomeQLinearMatMul) {
  std::mt19937 engine(6);
  Steps all;
  for (int form = 0; form < 4; ++form) {
    const bool gemm = form >= 2, per_channel = form % 2 == 1;
    SCOPED_TRACE(std::string(gemm ? "Gemm transB" : "MatMul") + (per_channel ? " per column" : " per tensor"));
    const int64_t m = 6, k = 64, n = 24;
    Graph g("qdq_matmul");
    Value* a = g.add_input("a", {DType::kFloat32, Shape{m, k}});
    Value* ad = fake_quantize(g, a, activation_quant(DType::kUInt8, 1.0f), "a");
    Value* bd = gemm ? quantized_weight(g, {n, k}, 0, per_channel, engine, "b")
                     : quantized_weight(g, {k, n}, 1, per_channel, engine, "b");
    Value* y = gemm ? g.add_node("Gemm", {ad, bd}, 1, {{"transB", Attribute(int64_t{1})}}, "gemm")->output(0)
                    : g.add_node("MatMul", {ad, bd}, 1, {}, "matmul")->output(0);
    ActivationQuant yq = activation_quant(DType::kInt8, 0.015f * 8);
    g.add_output(fake_quantize(g, y, yq, "y"));
    finish(g);
    auto fused = g.clone();
    PassContext ctx;
    ASSERT_TRUE(QdqFusion().run(*fused, ctx));
    finish(*fused);
    EXPECT_EQ(count_ops(*fused, "QLinearMatMul"), 1);
    EXPECT_EQ(count_ops(*fused, gemm ? "Gemm" : "MatMul"), 0);
    Tensor input = random_input({m, k}, 31 + static_cast<uint32_t>(form));
    Steps s = steps_apart(evaluate_graph(g, {{"a", input}})[0], evaluate_graph(*fused, {{"a", input}})[0], yq.scale);
    EXPECT_LE(s.largest, 1.0 + 1e-3);
    all.apart += s.apart;
    all.total += s.total;
  }
  EXPECT_LT(static_cast<double>(all.apart), 0.02 * static_cast<double>(all.total));
  std::cout << "QDQ matmul vs QLinearMatMul: " << all.apart << " of " << all.total << " elements 1 step apart\n";
}

// DequantizeLinear -> MaxPool -> QuantizeLinear at the same scale and zero
// point (equal constants, as calibration gives a max pool of a Relu'd
// value) becomes MaxPool on the integers, with the same bits out; at
// another scale it stays.
TEST(QdqFusion, MaxPoolBetweenEqualParametersRunsOnTheIntegers) {
  for (DType dtype : {DType::kUInt8, DType::kInt8}) {
    for (bool same : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (same ? " same parameters" : " another scale"));
      Graph g("qdq_max_pool");
      Value* x = g.add_input("x", {DType::kFloat32, Shape{2, 8, 9, 9}});
      const ActivationQuant act = activation_quant(dtype, 1.0f);
      Value* xd = fake_quantize(g, x, act, "x");
      std::map<std::string, Attribute> pool = {{"kernel_shape", Attribute(Ints{3, 3})},
                                               {"strides", Attribute(Ints{2, 2})},
                                               {"pads", Attribute(Ints{1, 1, 1, 1})}};
      Value* p = g.add_node("MaxPool", {xd}, 1, pool, "maxpool")->output(0);
      ActivationQuant out = act;
      if (!same) out.scale *= 1.5f;
      g.add_output(fake_quantize(g, p, out, "p"));
      finish(g);
      auto fused = g.clone();
      PassContext ctx;
      EXPECT_EQ(QdqFusion().run(*fused, ctx), same);
      finish(*fused);
      int integer_pools = 0;
      for (const Node* node : fused->nodes()) {
        integer_pools += node->op_type() == "MaxPool" && node->input(0)->dtype() == dtype;
      }
      EXPECT_EQ(integer_pools, same ? 1 : 0);
      EXPECT_EQ(count_ops(*fused, "QuantizeLinear"), same ? 1 : 2);
      Tensor input = random_input({2, 8, 9, 9}, 61);
      EXPECT_TRUE(evaluate_graph(g, {{"x", input}})[0].bitwise_equal(evaluate_graph(*fused, {{"x", input}})[0]));
    }
  }
}

// Weights that are not constants, per-axis activation scales and a Gemm
// bias are not the pattern: the graph stays as it is.
TEST(QdqFusion, OtherPatternsStay) {
  std::mt19937 engine(7);
  {
    Graph g("weights_are_inputs");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 4, 6, 6}});
    Value* w = g.add_input("w", {DType::kFloat32, Shape{8, 4, 3, 3}});
    Value* xd = fake_quantize(g, x, activation_quant(DType::kUInt8, 1.0f), "x");
    Value* wd = fake_quantize(g, w, activation_quant(DType::kInt8, 1.0f), "w");
    Value* y = g.add_node("Conv", {xd, wd}, 1, {}, "conv")->output(0);
    g.add_output(fake_quantize(g, y, activation_quant(DType::kUInt8, 4.0f), "y"));
    finish(g);
    PassContext ctx;
    EXPECT_FALSE(QdqFusion().run(g, ctx));
    EXPECT_EQ(count_ops(g, "Conv"), 1);
  }
  {
    Graph g("gemm_with_bias");
    Value* a = g.add_input("a", {DType::kFloat32, Shape{2, 16}});
    Value* ad = fake_quantize(g, a, activation_quant(DType::kUInt8, 1.0f), "a");
    Value* bd = quantized_weight(g, {8, 16}, 0, true, engine, "b");
    Value* c = g.add_constant("c", random_input({8}, 3));
    Value* y = g.add_node("Gemm", {ad, bd, c}, 1, {{"transB", Attribute(int64_t{1})}}, "gemm")->output(0);
    g.add_output(fake_quantize(g, y, activation_quant(DType::kUInt8, 4.0f), "y"));
    finish(g);
    PassContext ctx;
    EXPECT_FALSE(QdqFusion().run(g, ctx));
    EXPECT_EQ(count_ops(g, "Gemm"), 1);
  }
}

// A quantized ResNet basic block and head: two QDQ convs, the residual Add
// and Relu, MaxPool, GlobalAveragePool and Flatten on dequantized values, a
// QDQ Gemm. The level-3 pipeline (QDQ fusion, folding, the channels-last
// layout, ...) keeps the results: at most 2 output steps apart (a step in a
// conv's output moves the head's), on a few elements.
TEST(QdqFusion, QuantizedResidualBlockThroughTheLevelThreePipeline) {
  std::mt19937 engine(8);
  Graph g("qdq_block");
  const ActivationQuant act = activation_quant(DType::kUInt8, 2.0f);
  Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 16, 10, 10}});
  Value* xd = fake_quantize(g, x, act, "x");
  std::map<std::string, Attribute> pad1 = {{"pads", Attribute(Ints{1, 1, 1, 1})}};
  Value* c1 = g.add_node("Conv", {xd, quantized_weight(g, {16, 16, 3, 3}, 0, true, engine, "w1"),
                                  g.add_constant("b1", random_input({16}, 1))}, 1, pad1, "conv1")->output(0);
  Value* r1 = g.add_node("Relu", {c1}, 1, {}, "relu1")->output(0);
  Value* h = fake_quantize(g, r1, act, "h");
  Value* c2 = g.add_node("Conv", {h, quantized_weight(g, {16, 16, 3, 3}, 0, true, engine, "w2")}, 1, pad1, "conv2")->output(0);
  Value* c2d = fake_quantize(g, c2, act, "c2");
  Value* sum = g.add_node("Add", {c2d, xd}, 1, {}, "add")->output(0);
  Value* r2 = fake_quantize(g, g.add_node("Relu", {sum}, 1, {}, "relu2")->output(0), act, "r2");
  std::map<std::string, Attribute> pool = {{"kernel_shape", Attribute(Ints{2, 2})}, {"strides", Attribute(Ints{2, 2})}};
  Value* p = fake_quantize(g, g.add_node("MaxPool", {r2}, 1, pool, "maxpool")->output(0), act, "p");
  Value* gap = g.add_node("GlobalAveragePool", {p}, 1, {}, "gap")->output(0);
  Value* flat = fake_quantize(g, g.add_node("Flatten", {gap}, 1, {}, "flatten")->output(0), act, "flat");
  Value* fc = g.add_node("Gemm", {flat, quantized_weight(g, {10, 16}, 0, true, engine, "fc")}, 1,
                         {{"transB", Attribute(int64_t{1})}}, "fc")->output(0);
  const ActivationQuant out = activation_quant(DType::kInt8, 1.0f);
  g.add_output(fake_quantize(g, fc, out, "out"));
  finish(g);

  auto optimized = g.clone();
  PassContext ctx;
  // Without the residual fusion: it skips the conv output's rounding and
  // saturation (this block's range for it is narrow), and has its own tests.
  inference_pipeline(3, {"qdq_residual_fusion"})->run(*optimized, ctx);
  EXPECT_EQ(count_ops(*optimized, "Conv") + count_ops(*optimized, "FusedConv"), 0);
  EXPECT_EQ(count_ops(*optimized, "QLinearConv") + count_ops(*optimized, "FusedQLinearConv"), 2);
  EXPECT_EQ(count_ops(*optimized, "QLinearMatMul"), 1);
  // The layout pass runs both int8 convs channels-last, and the Transposes
  // between them cancel: the network input's two (its u8 form into conv1,
  // its f32 form into the residual Add) and one out before Flatten remain.
  int nhwc = 0;
  for (const Node* node : optimized->nodes()) {
    nhwc += node->op_type() == "FusedQLinearConv" && node->attr("layout").s() == "NHWC";
  }
  EXPECT_EQ(nhwc, 2);
  EXPECT_LE(count_ops(*optimized, "Transpose"), 3);
  for (uint32_t seed : {41u, 42u, 43u}) {
    Tensor input = random_input({1, 16, 10, 10}, seed);
    Steps s = steps_apart(evaluate_graph(g, {{"x", input}})[0], evaluate_graph(*optimized, {{"x", input}})[0], out.scale);
    EXPECT_LE(s.largest, 2.0 + 1e-3) << "seed " << seed;
    std::cout << "block, seed " << seed << ": " << s.apart << " of " << s.total << " outputs apart, largest " << s.largest << " steps\n";
  }
}

}  // namespace
}  // namespace weir
