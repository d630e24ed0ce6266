// QdqResidualFusion: quantized ResNet blocks (QDQ convs, the residual Add of
// the last conv's dequantized output and a dequantized shortcut, an optional
// Relu, QuantizeLinear) run before and after QdqFusion + QdqResidualFusion on
// the same random inputs. The Add and Relu go into the last conv (a
// FusedQLinearConv with the addend Z), its outputs stay within one output
// step plus half the skipped conv-output step of the QDQ graph's, oneDNN's
// sum post-op agrees with the reference loops, and through the level-3
// pipeline and a planned Session the conv writes over its addend with the
// same results. Patterns the pass must not take stay as they are.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/type_inference.h"
#include "core/verifier.h"
#include "ops/graph_evaluator.h"
#include "ops/quantization/quantization_common.h"
#include "ops/register_ops.h"
#include "passes/fusion/qdq_fusion.h"
#include "passes/fusion/qdq_residual_fusion.h"
#include "passes/pass_manager.h"
#include "runtime/session.h"
#include "tests/passes/qdq_graph_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using Ints = std::vector<int64_t>;
using testing::activation_quant;
using testing::ActivationQuant;
using testing::fake_quantize;
using testing::random_input;
using testing::steps_apart;
using testing::Steps;
using testing::zero_point;

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

// FusedQLinearConvs that take an addend Z.
int count_with_addend(const Graph& g) {
  int n = 0;
  for (const Node* node : g.nodes()) {
    n += node->op_type() == "FusedQLinearConv" && node->num_inputs() > 9 && node->input(9) != nullptr;
  }
  return n;
}

// DQ of a constant s8 conv weight with per-output-channel scales in [0.001, 0.003].
Value* conv_weight(Graph& g, const Ints& sizes, std::mt19937& engine, const std::string& name) {
  return testing::quantized_weight(g, sizes, 0, true, engine, name, 0.001f, 0.003f);
}

void finish(Graph& g) {
  infer_graph_types(g, default_op_registry());
  verify_graph(g, default_op_registry());
}

struct BlockOptions {
  DType dtype = DType::kUInt8;
  bool relu = true;
  bool downsample = false;  // the shortcut is a 1x1 QDQ conv, not the block input
  bool conv_first = true;   // Add(conv, shortcut) or Add(shortcut, conv)
};

struct Block {
  std::unique_ptr<Graph> graph;
  ActivationQuant conv_out, out;
};

// A ResNet basic block in QDQ form; its output is the dequantized block output.
Block qdq_block(const BlockOptions& o, uint32_t seed) {
  std::mt19937 engine(seed);
  // The conv output's range holds its values, as a calibrated range does
  // (checked below): where the QDQ graph saturates the conv output, the
  // fused conv, which no longer rounds to that grid, does not.
  Block b{std::make_unique<Graph>("qdq_residual_block"), activation_quant(o.dtype, 16.0f),
          activation_quant(o.dtype, 16.0f)};
  Graph& g = *b.graph;
  const ActivationQuant act = activation_quant(o.dtype, 2.0f);
  Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 16, 10, 10}});
  Value* xd = fake_quantize(g, x, act, "x");
  std::map<std::string, Attribute> pad1 = {{"pads", Attribute(Ints{1, 1, 1, 1})}};
  Value* c1 = g.add_node("Conv", {xd, conv_weight(g, {16, 16, 3, 3}, engine, "w1"),
                                  g.add_constant("b1", random_input({16}, seed + 1))},
                         1, pad1, "conv1")
                  ->output(0);
  Value* h = fake_quantize(g, g.add_node("Relu", {c1}, 1, {}, "relu1")->output(0), act, "h");
  Value* c2 = g.add_node("Conv", {h, conv_weight(g, {16, 16, 3, 3}, engine, "w2"),
                                  g.add_constant("b2", random_input({16}, seed + 2))},
                         1, pad1, "conv2")
                  ->output(0);
  Value* c2d = fake_quantize(g, c2, b.conv_out, "c2");
  Value* shortcut = xd;
  if (o.downsample) {
    Value* c3 = g.add_node("Conv", {xd, conv_weight(g, {16, 16, 1, 1}, engine, "w3")}, 1, {}, "conv3")->output(0);
    shortcut = fake_quantize(g, c3, b.conv_out, "c3");  // the pass may take either conv
  }
  Value* sum = g.add_node("Add", o.conv_first ? std::vector<Value*>{c2d, shortcut} : std::vector<Value*>{shortcut, c2d},
                          1, {}, "add")
                   ->output(0);
  if (o.relu) sum = g.add_node("Relu", {sum}, 1, {}, "relu2")->output(0);
  g.add_output(fake_quantize(g, sum, b.out, "out"));
  finish(g);
  return b;
}

TEST(QdqResidualFusion, ResidualAddGoesIntoTheLastConvAndMatchesTheQdqGraph) {
  int variant = 0;
  for (DType dtype : {DType::kUInt8, DType::kInt8}) {
    for (int flags = 0; flags < 8; ++flags) {
      BlockOptions o{dtype, (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0};
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (o.relu ? " relu" : "") + (o.downsample ? " downsample" : "") +
                   (o.conv_first ? " conv first" : " shortcut first"));
      Block b = qdq_block(o, 10 + static_cast<uint32_t>(variant++));
      auto fused = b.graph->clone();
      PassContext ctx;
      ASSERT_TRUE(QdqFusion().run(*fused, ctx));
      ASSERT_TRUE(QdqResidualFusion().run(*fused, ctx));
      finish(*fused);
      EXPECT_EQ(count_ops(*fused, "Add"), 0);
      EXPECT_EQ(count_ops(*fused, "Relu"), 0);
      EXPECT_EQ(count_with_addend(*fused), 1);
      EXPECT_EQ(count_ops(*fused, "QLinearConv") + count_ops(*fused, "FusedQLinearConv"), o.downsample ? 3 : 2);
      // The output's QuantizeLinear went into the conv; the input's stays,
      // and DequantizeLinear only dequantizes the output.
      EXPECT_EQ(count_ops(*fused, "QuantizeLinear"), 1);
      EXPECT_EQ(count_ops(*fused, "DequantizeLinear"), 1);
      // One rounding, plus half a step of the conv output's grid that the fused conv no longer rounds to.
      const double bound = 1.0 + 0.5 * b.conv_out.scale / b.out.scale + 1e-3;
      Steps all;
      for (uint32_t seed : {1u, 2u, 3u}) {
        Tensor input = random_input({1, 16, 10, 10}, seed + 100 * static_cast<uint32_t>(variant));
        std::unordered_map<const Value*, Tensor> values = evaluate_all_values(*b.graph, {{"x", input}});
        for (const char* name : {"c2_q:0", "c3_q:0"}) {
          const Value* conv_out = b.graph->find_value(name);
          if (conv_out == nullptr) continue;
          const Tensor& conv_q = values.at(conv_out);
          for (int64_t i = 0; i < conv_q.num_elements(); ++i) {
            int q = dtype == DType::kInt8 ? conv_q.data<int8_t>()[i] : conv_q.data<uint8_t>()[i];
            ASSERT_TRUE(q > (dtype == DType::kInt8 ? -128 : 0) && q < (dtype == DType::kInt8 ? 127 : 255))
                << name << " saturates (" << q << "); widen its range";
          }
        }
        Tensor before = values.at(b.graph->outputs()[0]);
        Tensor after = evaluate_graph(*fused, {{"x", input}})[0];
        Steps s = steps_apart(before, after, b.out.scale);
        EXPECT_LE(s.largest, bound) << "seed " << seed;
        all.apart += s.apart;
        all.total += s.total;
        // oneDNN's sum post-op against the reference loops: the same up to a
        // tie rounded the other way (oneDNN adds the zero point before rounding).
        Tensor reference;
        {
          ScopedQuantizedReference forced;
          reference = evaluate_graph(*fused, {{"x", input}})[0];
        }
        Steps r = steps_apart(after, reference, b.out.scale);
        EXPECT_LE(r.largest, 1.0 + 1e-3) << "seed " << seed;
        EXPECT_LT(static_cast<double>(r.apart), 0.01 * static_cast<double>(r.total)) << "seed " << seed;
      }
      EXPECT_LT(static_cast<double>(all.apart), 0.5 * static_cast<double>(all.total));
    }
  }
}

// Through the level-3 pipeline (the layout pass runs the convs channels-last
// with the addend transposed along) and a planned Session, where the conv
// writes its output over the addend's buffer: the same results as the
// unplanned evaluation of the same graph, and near the QDQ graph's.
TEST(QdqResidualFusion, PlannedSessionWritesOverTheAddend) {
  for (bool downsample : {false, true}) {
    SCOPED_TRACE(downsample ? "downsample" : "identity shortcut");
    Block b = qdq_block({DType::kUInt8, true, downsample, true}, 40);
    auto optimized = b.graph->clone();
    PassContext ctx;
    inference_pipeline(3, {})->run(*optimized, ctx);
    EXPECT_EQ(count_ops(*optimized, "Add"), 0);
    EXPECT_EQ(count_with_addend(*optimized), 1);
    auto plan = compile(*optimized);
    const Node* residual = nullptr;
    for (const Node* node : plan->graph().nodes()) {
      if (node->op_type() == "FusedQLinearConv" && node->num_inputs() > 9 && node->input(9) != nullptr) residual = node;
    }
    ASSERT_NE(residual, nullptr);
    EXPECT_EQ(residual->attr("layout").s(), "NHWC");
    auto slot = plan->memory().slots.find(residual->output(0));
    ASSERT_NE(slot, plan->memory().slots.end());
    // The identity shortcut is also read by the first conv, which runs before.
    EXPECT_TRUE(slot->second.in_place) << "the conv should write over its addend";
    Session session(plan);
    for (uint32_t seed : {5u, 6u}) {
      Tensor input = random_input({1, 16, 10, 10}, seed);
      Tensor planned = session.run({{"x", input}})[0];
      EXPECT_TRUE(planned.bitwise_equal(evaluate_graph(*optimized, {{"x", input}})[0]));
      Steps s = steps_apart(evaluate_graph(*b.graph, {{"x", input}})[0], planned, b.out.scale);
      EXPECT_LE(s.largest, 1.0 + 0.5 * b.conv_out.scale / b.out.scale + 1e-3);
    }
  }
}

// Not the pattern: the conv's output read elsewhere too, an Add that
// broadcasts, and a conv output whose DequantizeLinear disagrees with the
// conv's own output parameters. The Add stays.
TEST(QdqResidualFusion, OtherPatternsStay) {
  auto run_both = [](Graph& g) {
    PassContext ctx;
    QdqFusion().run(g, ctx);
    bool changed = QdqResidualFusion().run(g, ctx);
    finish(g);
    return changed;
  };
  const ActivationQuant act = activation_quant(DType::kUInt8, 2.0f);
  std::mt19937 engine(3);
  {
    Graph g("conv_output_read_twice");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 8, 6, 6}});
    Value* xd = fake_quantize(g, x, act, "x");
    Value* c = g.add_node("Conv", {xd, conv_weight(g, {8, 8, 1, 1}, engine, "w")}, 1, {}, "conv")->output(0);
    Value* cd = fake_quantize(g, c, act, "c");
    Value* sum = g.add_node("Add", {cd, xd}, 1, {}, "add")->output(0);
    g.add_output(fake_quantize(g, sum, act, "out"));
    g.add_output(g.add_node("Neg", {cd}, 1, {}, "neg")->output(0));
    finish(g);
    EXPECT_FALSE(run_both(g));
    EXPECT_EQ(count_ops(g, "Add"), 1);
  }
  {
    Graph g("broadcast_add");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 8, 6, 6}});
    Value* s = g.add_input("s", {DType::kFloat32, Shape{1, 8, 1, 1}});
    Value* xd = fake_quantize(g, x, act, "x");
    Value* c = g.add_node("Conv", {xd, conv_weight(g, {8, 8, 1, 1}, engine, "w")}, 1, {}, "conv")->output(0);
    Value* sum =
        g.add_node("Add", {fake_quantize(g, c, act, "c"), fake_quantize(g, s, act, "s")}, 1, {}, "add")->output(0);
    g.add_output(fake_quantize(g, sum, act, "out"));
    finish(g);
    EXPECT_FALSE(run_both(g));
    EXPECT_EQ(count_ops(g, "Add"), 1);
  }
  {
    Graph g("requantized_conv_output");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 8, 6, 6}});
    Value* xd = fake_quantize(g, x, act, "x");
    Value* c = g.add_node("Conv", {xd, conv_weight(g, {8, 8, 1, 1}, engine, "w")}, 1, {}, "conv")->output(0);
    // The conv quantizes at one scale; the Add reads it dequantized at another.
    Value* cq = g.add_node("QuantizeLinear", {c, g.add_constant("c_scale", Tensor::scalar<float>(0.02f)),
                                              g.add_constant("c_zero", zero_point(DType::kUInt8, 128))},
                           1, {}, "c_q")
                    ->output(0);
    Value* cd = g.add_node("DequantizeLinear", {cq, g.add_constant("c_scale2", Tensor::scalar<float>(0.03f)),
                                                g.add_constant("c_zero2", zero_point(DType::kUInt8, 128))},
                           1, {}, "c_dq")
                    ->output(0);
    Value* sum = g.add_node("Add", {cd, xd}, 1, {}, "add")->output(0);
    g.add_output(fake_quantize(g, sum, act, "out"));
    finish(g);
    EXPECT_FALSE(run_both(g));
    EXPECT_EQ(count_ops(g, "Add"), 1);
  }
}

}  // namespace
}  // namespace weir
