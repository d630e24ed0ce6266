// Conv activation fusion (every activation FusedConv applies), the
// channels-last layout pass and the rewrite-rule driver: each graph runs
// before and after the pass on the same random inputs, and the rewritten
// structure is checked.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/type_inference.h"
#include "core/verifier.h"
#include "ops/graph_evaluator.h"
#include "ops/register_ops.h"
#include "passes/fusion/conv_activation_fusion.h"
#include "passes/layout/channels_last_layout.h"
#include "passes/pass_manager.h"
#include "passes/rewrite_rule.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using Ints = std::vector<int64_t>;

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

Tensor random_tensor(DType dtype, const Ints& sizes, uint32_t seed, float low = -1.0f, float high = 1.0f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<float> values = testing::random_floats(static_cast<size_t>(n), seed, low, high);
  if (dtype == DType::kFloat32) return Tensor::from_vector(values, sizes);
  return Tensor::from_vector(std::vector<double>(values.begin(), values.end()), sizes);
}

double at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kFloat64 ? t.data<double>()[i] : t.data<float>()[i];
}

// Largest |a - b| / (1 + |a|) over the elements.
double max_relative_difference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements() && a.sizes() == b.sizes(); ++i) {
    worst = std::max(worst, std::abs(at(a, i) - at(b, i)) / (1 + std::abs(at(a, i))));
  }
  return worst;
}

void finish(Graph& g) {
  infer_graph_types(g, default_op_registry());
  verify_graph(g, default_op_registry());
}

// x [2, 3, 9, 9] -> Conv (3x3, pad 1, stride 2, bias) -> y; `activation`
// appends the activation nodes and returns the graph output.
template <typename Activation>
std::unique_ptr<Graph> conv_then(DType dtype, Activation activation) {
  auto g = std::make_unique<Graph>("conv_activation");
  Value* x = g->add_input("x", {dtype, Shape{2, 3, 9, 9}});
  Value* w = g->add_constant("w", random_tensor(dtype, {4, 3, 3, 3}, 1));
  Value* b = g->add_constant("b", random_tensor(dtype, {4}, 2));
  Value* y = g->add_node("Conv", {x, w, b}, 1, {{"pads", Attribute(Ints{1, 1, 1, 1})}, {"strides", Attribute(Ints{2, 2})}}, "conv")
                 ->output(0);
  g->add_output(activation(*g, y));
  finish(*g);
  return g;
}

struct ActivationCase {
  const char* name;
  std::function<Value*(Graph&, Value*)> build;
};

std::vector<ActivationCase> activation_cases(DType dtype) {
  auto scalar = [dtype](Graph& g, const char* name, double v) {
    return g.add_constant(g.unique_name(name), dtype == DType::kFloat32 ? Tensor::scalar(static_cast<float>(v)) : Tensor::scalar(v));
  };
  return {
      {"Relu", [](Graph& g, Value* y) { return g.add_node("Relu", {y})->output(0); }},
      {"LeakyRelu", [](Graph& g, Value* y) { return g.add_node("LeakyRelu", {y}, 1, {{"alpha", Attribute(0.2)}})->output(0); }},
      {"Clip", [scalar](Graph& g, Value* y) { return g.add_node("Clip", {y, scalar(g, "lo", -0.3), scalar(g, "hi", 0.4)})->output(0); }},
      {"Sigmoid", [](Graph& g, Value* y) { return g.add_node("Sigmoid", {y})->output(0); }},
      {"Tanh", [](Graph& g, Value* y) { return g.add_node("Tanh", {y})->output(0); }},
      {"Gelu", [](Graph& g, Value* y) { return g.add_node("Gelu", {y})->output(0); }},
      {"GeluTanh", [](Graph& g, Value* y) { return g.add_node("Gelu", {y}, 1, {{"approximate", Attribute("tanh")}})->output(0); }},
      {"Silu", [](Graph& g, Value* y) { return g.add_node("Mul", {y, g.add_node("Sigmoid", {y})->output(0)})->output(0); }},
      {"Silu", [](Graph& g, Value* y) { return g.add_node("Mul", {g.add_node("Sigmoid", {y})->output(0), y})->output(0); }},
  };
}

TEST(ConvActivationFusion, FusesEveryActivationAndMatchesTheUnfusedGraph) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const ActivationCase& c : activation_cases(dtype)) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)));
      auto g = conv_then(dtype, c.build);
      auto fused = g->clone();
      PassContext ctx;
      EXPECT_TRUE(ConvActivationFusion().run(*fused, ctx));
      finish(*fused);
      ASSERT_EQ(fused->num_nodes(), 1u) << "one FusedConv and nothing else";
      const Node* node = fused->nodes().front();
      EXPECT_EQ(node->op_type(), "FusedConv");
      EXPECT_EQ(node->attr("activation").s(), c.name);
      EXPECT_EQ(fused->outputs().front()->name(), g->outputs().front()->name()) << "the graph output keeps its name";
      Tensor x = random_tensor(dtype, {2, 3, 9, 9}, 3, -2.0f, 2.0f);
      Tensor before = evaluate_graph(*g, {{"x", x}})[0], after = evaluate_graph(*fused, {{"x", x}})[0];
      // oneDNN's f32 erf, tanh and exp are polynomial approximations; the
      // activation's parameters (LeakyRelu's slope, Clip's bounds) are f32.
      EXPECT_LT(max_relative_difference(before, after), dtype == DType::kFloat32 ? 2e-6 : 1e-7);
    }
  }
}

TEST(ConvActivationFusion, LeavesWhatItCannotFuse) {
  // The conv output is read twice: fusing would compute the conv twice.
  auto shared = conv_then(DType::kFloat32, [](Graph& g, Value* y) {
    return g.add_node("Add", {g.add_node("Relu", {y})->output(0), y})->output(0);
  });
  // Clip with a bound computed at run time.
  auto dynamic_bound = conv_then(DType::kFloat32, [](Graph& g, Value* y) {
    Value* bound = g.add_node("ReduceMax", {y}, 1, {{"keepdims", Attribute(int64_t{0})}})->output(0);
    return g.add_node("Clip", {y, bound})->output(0);
  });
  // Mul(y, Sigmoid(z)) with z != y is not SiLU.
  auto not_silu = conv_then(DType::kFloat32, [](Graph& g, Value* y) {
    return g.add_node("Mul", {y, g.add_node("Sigmoid", {g.add_node("Neg", {y})->output(0)})->output(0)})->output(0);
  });
  for (Graph* g : {shared.get(), dynamic_bound.get(), not_silu.get()}) {
    PassContext ctx;
    EXPECT_FALSE(ConvActivationFusion().run(*g, ctx));
    EXPECT_EQ(count_ops(*g, "FusedConv"), 0);
  }
}

// Add(Conv(x), z) then Relu: one FusedConv with the addend z, through
// oneDNN's sum post-op (f32, on a blocked output and channels-last) and the
// direct loops (f64); with the conv on either side of the Add.
TEST(ConvResidualFusion, AddsTheResidualInsideTheConv) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int side = 0; side < 2; ++side) {
      for (bool layout : {false, true}) {
        if (layout && dtype == DType::kFloat64) continue;
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " side " + std::to_string(side) + (layout ? " NHWC" : ""));
        auto g = conv_then(dtype, [&](Graph& graph, Value* y) {
          Value* z = graph.add_node("Tanh", {graph.add_input("z", {dtype, Shape{2, 4, 5, 5}})})->output(0);
          Value* sum = graph.add_node("Add", side == 0 ? std::vector<Value*>{y, z} : std::vector<Value*>{z, y})->output(0);
          return graph.add_node("Relu", {sum})->output(0);
        });
        auto fused = g->clone();
        PassContext ctx;
        EXPECT_TRUE(make_pass("conv_residual_fusion")->run(*fused, ctx));
        EXPECT_TRUE(ConvActivationFusion().run(*fused, ctx));
        if (layout) {
          EXPECT_TRUE(ChannelsLastLayout().run(*fused, ctx));
        }
        finish(*fused);
        EXPECT_EQ(count_ops(*fused, "Add"), 0);
        EXPECT_EQ(count_ops(*fused, "Relu"), 0);
        ASSERT_EQ(count_ops(*fused, "FusedConv"), 1);
        Tensor x = random_tensor(dtype, {2, 3, 9, 9}, 3, -2.0f, 2.0f), z = random_tensor(dtype, {2, 4, 5, 5}, 4, -2.0f, 2.0f);
        Tensor before = evaluate_graph(*g, {{"x", x}, {"z", z}})[0], after = evaluate_graph(*fused, {{"x", x}, {"z", z}})[0];
        EXPECT_LT(max_relative_difference(before, after), dtype == DType::kFloat32 ? 1e-6 : 1e-12);
      }
    }
  }
}

// A Linear layer on [batch, seq, hidden] input: MatMul with a 2-D constant
// weight, a bias (as [N] or [1, 1, N]) and each activation -> one
// FusedMatMul, through oneDNN (f32, with B packed once) and the reference
// loops (f64); also on a non-constant B.
TEST(MatMulFusion, FusesBiasAndActivationOfALinearLayer) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const ActivationCase& c : activation_cases(dtype)) {
      for (bool constant_b : {true, false}) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)) + (constant_b ? " constant B" : " input B"));
        Graph g("linear");
        Value* x = g.add_input("x", {dtype, Shape{2, 5, 8}});
        Value* w = constant_b ? g.add_constant("w", random_tensor(dtype, {8, 6}, 1)) : g.add_input("w", {dtype, Shape{8, 6}});
        Value* b = g.add_constant("b", random_tensor(dtype, constant_b ? Ints{6} : Ints{1, 1, 6}, 2));
        Value* y = g.add_node("Add", {g.add_node("MatMul", {x, w})->output(0), b})->output(0);
        g.add_output(c.build(g, y));
        finish(g);
        auto fused = g.clone();
        PassContext ctx;
        EXPECT_TRUE(make_pass("matmul_fusion")->run(*fused, ctx));
        finish(*fused);
        ASSERT_EQ(fused->num_nodes(), 1u);
        EXPECT_EQ(fused->nodes().front()->op_type(), "FusedMatMul");
        EXPECT_EQ(fused->nodes().front()->attr("activation").s(), c.name);
        std::map<std::string, Tensor> feeds = {{"x", random_tensor(dtype, {2, 5, 8}, 3, -2.0f, 2.0f)}};
        if (!constant_b) feeds["w"] = random_tensor(dtype, {8, 6}, 4);
        Tensor before = evaluate_graph(g, feeds)[0], after = evaluate_graph(*fused, feeds)[0];
        EXPECT_LT(max_relative_difference(before, after), dtype == DType::kFloat32 ? 2e-6 : 1e-7);
      }
    }
  }
}

TEST(MatMulFusion, LeavesBatchedWeightsAndSharedProductsAlone) {
  Graph g("unfusable");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{2, 5, 8}});
  Value* batched = g.add_constant("batched", random_tensor(DType::kFloat32, {2, 8, 6}, 1));
  Value* bias = g.add_constant("bias", random_tensor(DType::kFloat32, {6}, 2));
  g.add_output(g.add_node("Relu", {g.add_node("MatMul", {x, batched})->output(0)})->output(0));  // B is 3-D
  Value* w = g.add_constant("w", random_tensor(DType::kFloat32, {8, 6}, 3));
  Value* shared = g.add_node("MatMul", {x, w})->output(0);
  g.add_output(g.add_node("Add", {shared, bias})->output(0));
  g.add_output(shared);  // the product itself is an output
  Value* row_bias = g.add_constant("row_bias", random_tensor(DType::kFloat32, {5, 1}, 4));
  g.add_output(g.add_node("Add", {g.add_node("MatMul", {x, w})->output(0), row_bias})->output(0));  // not per column
  finish(g);
  PassContext ctx;
  EXPECT_FALSE(make_pass("matmul_fusion")->run(g, ctx));
}

// The tanh form of GELU, with x^3 as Pow or as two Muls, becomes one Gelu
// (approximate tanh) and nothing of the pattern is left; a wrong
// coefficient is no GELU.
TEST(GeluFusion, RecognisesTheTanhForm) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    Graph g("gelu_tanh");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{4, 16}});
    auto node = [&](const std::string& op, std::vector<Value*> in) { return g.add_node(op, in)->output(0); };
    auto c = [&](float v) { return g.add_constant(g.unique_name("c"), Tensor::scalar(v)); };
    Value* cube = variant == 1 ? node("Mul", {node("Mul", {x, x}), x}) : node("Pow", {x, c(3.0f)});
    Value* inner = node("Add", {x, node("Mul", {c(variant == 2 ? 0.04f : 0.044715f), cube})});
    Value* t = node("Tanh", {node("Mul", {inner, c(0.7978845608f)})});
    g.add_output(node("Mul", {node("Mul", {x, c(0.5f)}), node("Add", {t, c(1.0f)})}));
    finish(g);
    auto fused = g.clone();
    PassContext ctx;
    bool changed = make_pass("gelu_fusion")->run(*fused, ctx);
    finish(*fused);
    if (variant == 2) {
      EXPECT_FALSE(changed);
      continue;
    }
    EXPECT_TRUE(changed);
    ASSERT_EQ(fused->num_nodes(), 1u) << "the pattern's nodes are removed with it";
    EXPECT_EQ(fused->nodes().front()->attr("approximate").s(), "tanh");
    Tensor input = random_tensor(DType::kFloat32, {4, 16}, 8, -3.0f, 3.0f);
    EXPECT_LT(max_relative_difference(evaluate_graph(g, {{"x", input}})[0], evaluate_graph(*fused, {{"x", input}})[0]), 1e-6);
  }
}

// Self-attention written out as a transformer does (per-head Reshape and
// Transpose, K transposed twice or once, a Mul or Div scale, an optional
// additive mask [B, 1, 1, S]) becomes one Attention node with no Transpose
// left; oneDNN (f32) and the direct loops (f64) match the written-out graph.
TEST(AttentionFusion, FusesScaledDotProductAttention) {
  const int64_t batch = 2, seq = 7, heads = 3, dim = 4, width = heads * dim;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int variant = 0; variant < 3; ++variant) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " variant " + std::to_string(variant));
      Graph g("attention");
      Value* x = g.add_input("x", {dtype, Shape{batch, seq, width}});
      Value* mask = variant == 1 ? g.add_input("mask", {dtype, Shape{batch, 1, 1, seq}}) : nullptr;
      auto node = [&](const std::string& op, std::vector<Value*> in, std::map<std::string, Attribute> attrs = {}) {
        return g.add_node(op, in, 1, attrs)->output(0);
      };
      auto linear = [&](uint32_t seed) { return node("MatMul", {x, g.add_constant(g.unique_name("w"), random_tensor(dtype, {width, width}, seed))}); };
      Value* split_shape = g.add_constant("split", Tensor::from_vector<int64_t>({0, 0, heads, dim}, {4}));
      auto split = [&](Value* t) { return node("Transpose", {node("Reshape", {t, split_shape})}, {{"perm", Attribute(Ints{0, 2, 1, 3})}}); };
      Value* q = split(linear(1));
      Value* k_t = variant == 2 ? node("Transpose", {node("Reshape", {linear(2), split_shape})}, {{"perm", Attribute(Ints{0, 2, 3, 1})}})
                                : node("Transpose", {split(linear(2))}, {{"perm", Attribute(Ints{0, 1, 3, 2})}});
      Value* v = split(linear(3));
      double scale = 1.0 / std::sqrt(static_cast<double>(dim));
      auto scalar = [&](double value) {
        return g.add_constant(g.unique_name("c"), dtype == DType::kFloat32 ? Tensor::scalar(static_cast<float>(value)) : Tensor::scalar(value));
      };
      Value* scores = node("MatMul", {q, k_t});
      scores = variant == 2 ? node("Div", {scores, scalar(1.0 / scale)}) : node("Mul", {scores, scalar(scale)});
      if (mask != nullptr) scores = node("Add", {scores, mask});
      Value* context = node("MatMul", {node("Softmax", {scores}, {{"axis", Attribute(int64_t{-1})}}), v});
      Value* merged = node("Reshape", {node("Transpose", {context}, {{"perm", Attribute(Ints{0, 2, 1, 3})}}),
                                       g.add_constant("merge", Tensor::from_vector<int64_t>({0, 0, width}, {3}))});
      g.add_output(node("Relu", {merged}));
      finish(g);
      auto fused = g.clone();
      PassContext ctx;
      EXPECT_TRUE(make_pass("attention_fusion")->run(*fused, ctx));
      finish(*fused);
      EXPECT_EQ(count_ops(*fused, "Attention"), 1);
      EXPECT_EQ(count_ops(*fused, "Transpose"), 0);
      EXPECT_EQ(count_ops(*fused, "Softmax"), 0);
      EXPECT_EQ(count_ops(*fused, "MatMul"), 3) << "the three projections";
      std::map<std::string, Tensor> feeds = {{"x", random_tensor(dtype, {batch, seq, width}, 4)}};
      if (mask != nullptr) {
        Tensor m = random_tensor(dtype, {batch, 1, 1, seq}, 5, -3.0f, 0.0f);
        feeds["mask"] = m;
      }
      Tensor before = evaluate_graph(g, feeds)[0], after = evaluate_graph(*fused, feeds)[0];
      EXPECT_LT(max_relative_difference(before, after), dtype == DType::kFloat32 ? 2e-6 : 1e-12);
    }
  }
}

// A tree of elementwise ops (x read twice, a one-element constant, every
// op FusedElementwise knows) becomes one FusedElementwise that computes
// exactly what the ops did, on a size that is not a multiple of its block,
// NaN included; a value read outside the group or a broadcast operand stops it.
TEST(ElementwiseFusion, FusesAChainIntoOneLoopWithTheSameResults) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Graph g("chain");
    Value* x = g.add_input("x", {dtype, Shape{3, 50, 7}});
    Value* z = g.add_input("z", {dtype, Shape{3, 50, 7}});
    auto node = [&](const std::string& op, std::vector<Value*> in) { return g.add_node(op, in)->output(0); };
    Value* half = g.add_constant("half", dtype == DType::kFloat32 ? Tensor::scalar(0.5f) : Tensor::scalar(0.5));
    Value* a = node("Sigmoid", {node("Mul", {node("Add", {x, z}), half})});
    Value* bb = node("Exp", {node("Neg", {node("Abs", {x})})});
    Value* c = node("Div", {node("Sub", {a, bb}), node("Max", {z, half})});
    Value* d = node("Min", {node("Relu", {node("Tanh", {c})}), node("Sqrt", {node("Abs", {z})})});
    Value* e = node("Log", {node("Add", {node("Erf", {d}), node("Reciprocal", {node("Add", {node("Abs", {x}), half})})})});
    g.add_output(node("Add", {node("Floor", {e}), node("Ceil", {node("Mul", {e, half})})}));
    finish(g);
    auto fused = g.clone();
    PassContext ctx;
    EXPECT_TRUE(make_pass("elementwise_fusion")->run(*fused, ctx));
    finish(*fused);
    ASSERT_EQ(fused->num_nodes(), 1u);
    EXPECT_EQ(fused->nodes().front()->op_type(), "FusedElementwise");
    Tensor xs = random_tensor(dtype, {3, 50, 7}, 1, -3.0f, 3.0f), zs = random_tensor(dtype, {3, 50, 7}, 2, -3.0f, 3.0f);
    if (dtype == DType::kFloat32) {
      xs.data<float>()[5] = NAN;
      zs.data<float>()[9] = NAN;
    } else {
      xs.data<double>()[5] = NAN;
      zs.data<double>()[9] = NAN;
    }
    Tensor before = evaluate_graph(g, {{"x", xs}, {"z", zs}})[0], after = evaluate_graph(*fused, {{"x", xs}, {"z", zs}})[0];
    EXPECT_TRUE(before.bitwise_equal(after)) << "the same scalar functions, in the same order";
  }
  Graph g("stops");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4, 6}});
  Value* row = g.add_constant("row", random_tensor(DType::kFloat32, {6}, 3));
  Value* shared = g.add_node("Exp", {x})->output(0);
  g.add_output(g.add_node("Neg", {shared})->output(0));
  g.add_output(shared);  // read outside the group
  g.add_output(g.add_node("Add", {g.add_node("Abs", {x})->output(0), row})->output(0));  // broadcast operand
  finish(g);
  PassContext ctx;
  EXPECT_FALSE(make_pass("elementwise_fusion")->run(g, ctx));
}

TEST(FusedElementwise, RejectsABadProgramNamingTheNode) {
  for (const char* line : {"Foo 0", "Add 0 5", "Neg", "Neg 0 0"}) {
    Graph g("bad");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{4}});
    g.add_output(g.add_node("FusedElementwise", {x}, 1, {{"program", Attribute(std::vector<std::string>{line})}}, "odd_chain")->output(0));
    try {
      infer_graph_types(g, default_op_registry());
      FAIL() << "accepted " << line;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("odd_chain"), std::string::npos) << e.what();
    }
  }
}

TEST(FusedConv, RejectsAnUnknownActivationOrLayoutNamingTheNode) {
  for (auto [attr, value] : {std::pair<const char*, const char*>{"activation", "Swish9"}, {"layout", "CHWN"}}) {
    Graph g("bad");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 3, 5, 5}});
    Value* w = g.add_constant("w", random_tensor(DType::kFloat32, {2, 3, 3, 3}, 1));
    g.add_output(g.add_node("FusedConv", {x, w}, 1, {{attr, Attribute(value)}}, "odd_conv")->output(0));
    try {
      infer_graph_types(g, default_op_registry());
      FAIL() << "accepted " << attr << " " << value;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("odd_conv"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(value), std::string::npos) << e.what();
    }
  }
}

// A small ResNet-like net: a per-channel scale before the first conv, a
// residual block whose shortcut comes from a max-pool (channels-first), a
// per-channel constant Mul, a second max-pool, a depthwise conv with Clip
// (Relu6) and a global average pool.
std::unique_ptr<Graph> small_conv_net(Dim batch = Dim(2)) {
  auto g = std::make_unique<Graph>("small_conv_net");
  const DType f = DType::kFloat32;
  Value* x = g->add_input("x", {f, Shape(std::vector<Dim>{batch, Dim(3), Dim(16), Dim(16)})});
  auto conv = [&](Value* in, int64_t k, int64_t c, int64_t kernel, int64_t group, uint32_t seed) {
    int64_t pad = kernel / 2;
    Value* w = g->add_constant(g->unique_name("w"), random_tensor(f, {k, c / group, kernel, kernel}, seed, -0.5f, 0.5f));
    Value* b = g->add_constant(g->unique_name("b"), random_tensor(f, {k}, seed + 100));
    return g->add_node("Conv", {in, w, b}, 1, {{"pads", Attribute(Ints{pad, pad, pad, pad})}, {"group", Attribute(group)}})
        ->output(0);
  };
  auto pool = [&](Value* in) {
    return g->add_node("MaxPool", {in}, 1, {{"kernel_shape", Attribute(Ints{2, 2})}, {"strides", Attribute(Ints{2, 2})}})->output(0);
  };
  Value* stem = g->add_node("Relu", {conv(x, 8, 3, 3, 1, 1)})->output(0);
  Value* pooled = pool(stem);
  Value* branch = g->add_node("Relu", {conv(pooled, 8, 8, 3, 1, 2)})->output(0);
  Value* sum = g->add_node("Add", {conv(branch, 8, 8, 3, 1, 3), pooled})->output(0);
  Value* scale = g->add_constant("channel_scale", random_tensor(f, {8, 1, 1}, 4, 0.5f, 1.5f));
  Value* scaled = g->add_node("Mul", {g->add_node("Relu", {sum})->output(0), scale})->output(0);
  Value* down = pool(scaled);
  Value* lo = g->add_constant("lo", Tensor::scalar(0.0f));
  Value* hi = g->add_constant("hi", Tensor::scalar(0.5f));
  Value* depthwise = g->add_node("Clip", {conv(down, 8, 8, 3, 8, 5), lo, hi})->output(0);
  g->add_output(g->add_node("GlobalAveragePool", {depthwise})->output(0));
  finish(*g);
  return g;
}

TEST(ChannelsLastLayout, RunsConvsChannelsLastWithTransposesOnlyAtTheBoundaries) {
  auto g = small_conv_net();
  auto optimized = g->clone();
  PassContext ctx;
  EXPECT_TRUE(ConvActivationFusion().run(*optimized, ctx));
  EXPECT_TRUE(ChannelsLastLayout().run(*optimized, ctx));
  finish(*optimized);
  EXPECT_EQ(count_ops(*optimized, "Conv"), 0);
  EXPECT_EQ(count_ops(*optimized, "FusedConv"), 4);
  for (const Node* node : optimized->nodes()) {
    if (node->op_type() == "FusedConv") {
      EXPECT_EQ(node->attr("layout").s(), "NHWC") << node->name();
    }
  }
  // Into the stem, and out after the global pool: the max-pools become
  // ChannelsLastPool and the global pool a ReduceMean over H and W.
  EXPECT_EQ(count_ops(*optimized, "Transpose"), 2);
  EXPECT_EQ(count_ops(*optimized, "ChannelsLastPool"), 2);
  EXPECT_EQ(count_ops(*optimized, "ReduceMean"), 1);
  Tensor x = random_tensor(DType::kFloat32, {2, 3, 16, 16}, 9, 0.0f, 1.0f);
  Tensor before = evaluate_graph(*g, {{"x", x}})[0], after = evaluate_graph(*optimized, {{"x", x}})[0];
  EXPECT_LT(max_relative_difference(before, after), 1e-5);
}

// A SqueezeNet fire module: squeeze 1x1, then 1x1 and 3x3 expands
// concatenated on the channel axis, a ceil-mode max-pool and the next squeeze.
std::unique_ptr<Graph> fire_module() {
  auto g = std::make_unique<Graph>("fire");
  const DType f = DType::kFloat32;
  Value* x = g->add_input("x", {f, Shape{1, 6, 11, 11}});
  auto conv = [&](Value* in, int64_t k, int64_t c, int64_t kernel, uint32_t seed) {
    int64_t pad = kernel / 2;
    Value* w = g->add_constant(g->unique_name("w"), random_tensor(f, {k, c, kernel, kernel}, seed, -0.5f, 0.5f));
    Value* b = g->add_constant(g->unique_name("b"), random_tensor(f, {k}, seed + 100, -0.5f, 0.5f));
    Value* y = g->add_node("Conv", {in, w, b}, 1, {{"pads", Attribute(Ints{pad, pad, pad, pad})}})->output(0);
    return g->add_node("Relu", {y})->output(0);
  };
  Value* squeeze = conv(x, 4, 6, 1, 1);
  Value* both = g->add_node("Concat", {conv(squeeze, 5, 4, 1, 2), conv(squeeze, 3, 4, 3, 3)}, 1, {{"axis", Attribute(int64_t{1})}})->output(0);
  Value* pooled = g->add_node("MaxPool", {both}, 1, {{"kernel_shape", Attribute(Ints{3, 3})}, {"strides", Attribute(Ints{2, 2})},
                                                     {"ceil_mode", Attribute(int64_t{1})}})->output(0);
  g->add_output(conv(pooled, 2, 8, 1, 4));
  finish(*g);
  return g;
}

// The Concat moves to the channels-last axis, so no Transpose sits inside
// the module (the concat split, which would remove the Concat, is off).
TEST(ChannelsLastLayout, ConcatOfChannelsMovesToTheLastAxis) {
  auto g = fire_module();
  auto optimized = g->clone();
  PassContext ctx;
  inference_pipeline(3, {"concat_conv_split"})->run(*optimized, ctx);
  EXPECT_EQ(count_ops(*optimized, "Transpose"), 2) << "into the squeeze conv, out of the last conv";
  ASSERT_EQ(count_ops(*optimized, "Concat"), 1);
  for (const Node* node : optimized->nodes()) {
    if (node->op_type() == "Concat") {
      EXPECT_EQ(node->attr("axis").i(), 3);
    }
  }
  Tensor input = random_tensor(DType::kFloat32, {1, 6, 11, 11}, 5);
  EXPECT_LT(max_relative_difference(evaluate_graph(*g, {{"x", input}})[0], evaluate_graph(*optimized, {{"x", input}})[0]), 1e-5);
}

// The whole pipeline on the fire module: the pool moves above the Concat
// (one per expand), and the next squeeze conv reads the two expands in two
// chained FusedConvs, so nothing is concatenated.
TEST(ConcatConvSplit, FireModuleRunsWithoutAConcat) {
  auto g = fire_module();
  auto optimized = g->clone();
  PassContext ctx;
  inference_pipeline(3)->run(*optimized, ctx);
  EXPECT_EQ(count_ops(*optimized, "Concat"), 0);
  EXPECT_EQ(count_ops(*optimized, "ChannelsLastPool"), 2);
  EXPECT_EQ(count_ops(*optimized, "FusedConv"), 5) << "squeeze, two expands, the next squeeze in two parts";
  EXPECT_EQ(count_ops(*optimized, "Transpose"), 2);
  Tensor input = random_tensor(DType::kFloat32, {1, 6, 11, 11}, 5);
  EXPECT_LT(max_relative_difference(evaluate_graph(*g, {{"x", input}})[0], evaluate_graph(*optimized, {{"x", input}})[0]), 1e-5);
}

// Conv(Concat(a, b, c)) on channels-first data, f32 (oneDNN) and f64 (the
// direct loops), with and without a fused activation: three chained
// FusedConvs, the bias on the first, the activation on the last.
TEST(ConcatConvSplit, SplitsAConvOverThreePartsAndMatches) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (relu ? " relu" : ""));
      Graph g("concat_conv");
      std::vector<Value*> parts;
      for (int64_t c : {4, 6, 3}) {
        Value* in = g.add_input("x" + std::to_string(c), {dtype, Shape{2, c, 7, 7}});
        parts.push_back(g.add_node("Tanh", {in})->output(0));
      }
      Value* joined = g.add_node("Concat", parts, 1, {{"axis", Attribute(int64_t{1})}})->output(0);
      Value* w = g.add_constant("w", random_tensor(dtype, {5, 13, 3, 3}, 1));
      Value* b = g.add_constant("b", random_tensor(dtype, {5}, 2));
      Value* y = g.add_node("Conv", {joined, w, b}, 1, {{"pads", Attribute(Ints{1, 1, 1, 1})}})->output(0);
      g.add_output(relu ? g.add_node("Relu", {y})->output(0) : y);
      finish(g);
      auto split = g.clone();
      PassContext ctx;
      if (relu) {
        EXPECT_TRUE(ConvActivationFusion().run(*split, ctx));
      }
      EXPECT_TRUE(make_pass("concat_conv_split")->run(*split, ctx));
      finish(*split);
      EXPECT_EQ(count_ops(*split, "Concat"), 0);
      ASSERT_EQ(count_ops(*split, "FusedConv"), 3);
      EXPECT_EQ(split->outputs().front()->name(), g.outputs().front()->name());
      const Node* last = split->outputs().front()->producer();
      EXPECT_EQ(last->attr("activation").s(), relu ? "Relu" : "None");
      std::map<std::string, Tensor> feeds;
      for (int64_t c : {4, 6, 3}) feeds["x" + std::to_string(c)] = random_tensor(dtype, {2, c, 7, 7}, static_cast<uint32_t>(10 + c), -2.0f, 2.0f);
      Tensor before = evaluate_graph(g, feeds)[0], after = evaluate_graph(*split, feeds)[0];
      EXPECT_LT(max_relative_difference(before, after), dtype == DType::kFloat32 ? 1e-5 : 1e-12);
    }
  }
}

// Where splitting would not pay or is not the same computation, the graph stays.
TEST(ConcatConvSplit, LeavesWhatItCannotSplit) {
  struct Case {
    const char* name;
    int64_t out_channels, group, axis;
    bool concat_is_output;
  };
  for (const Case& c : {Case{"wide output: the extra pass costs more than the Concat", 16, 1, 1, false},
                        Case{"grouped conv", 4, 2, 1, false}, Case{"spatial concat", 4, 1, 2, false},
                        Case{"concat read elsewhere", 4, 1, 1, true}}) {
    SCOPED_TRACE(c.name);
    Graph g("concat_conv");
    Value* a = g.add_node("Tanh", {g.add_input("a", {DType::kFloat32, Shape{1, 4, 6, 6}})})->output(0);
    Value* b = g.add_node("Tanh", {g.add_input("b", {DType::kFloat32, Shape{1, 4, 6, 6}})})->output(0);
    Value* joined = g.add_node("Concat", {a, b}, 1, {{"axis", Attribute(c.axis)}})->output(0);
    Value* w = g.add_constant("w", random_tensor(DType::kFloat32, {c.out_channels, 8 / c.group, 1, 1}, 1));
    if (c.axis != 1) w = g.add_constant("w4", random_tensor(DType::kFloat32, {c.out_channels, 4, 1, 1}, 1));
    g.add_output(g.add_node("Conv", {joined, w}, 1, {{"group", Attribute(c.group)}})->output(0));
    if (c.concat_is_output) g.add_output(joined);
    finish(g);
    PassContext ctx;
    EXPECT_FALSE(make_pass("concat_conv_split")->run(g, ctx));
    EXPECT_EQ(count_ops(g, "Concat"), 1);
  }
}

// An input normalization before a conv, in the forms exporters write it:
// per-channel Sub then Div, scalar Add then Mul (Weir's zoo), Mul then Sub
// of a [1, C, 1, 1] constant, k - x; on a plain and a grouped conv. Folded
// into the weights and bias, the conv reads x itself.
TEST(ConvInputAffineFolding, FoldsANormalizationIntoTheConv) {
  using Build = std::function<Value*(Graph&, Value*, DType)>;
  auto constant = [](Graph& g, DType dtype, const Ints& sizes, uint32_t seed, float low, float high) {
    return g.add_constant(g.unique_name("k"), random_tensor(dtype, sizes, seed, low, high));
  };
  const std::vector<std::pair<const char*, Build>> forms = {
      {"sub-div", [&](Graph& g, Value* x, DType t) {
         Value* centered = g.add_node("Sub", {x, constant(g, t, {3, 1, 1}, 20, -1.0f, 1.0f)})->output(0);
         return g.add_node("Div", {centered, constant(g, t, {3, 1, 1}, 21, 0.5f, 2.0f)})->output(0);
       }},
      {"add-mul scalars", [&](Graph& g, Value* x, DType t) {
         Value* shifted = g.add_node("Add", {x, constant(g, t, {}, 22, -1.0f, 1.0f)})->output(0);
         return g.add_node("Mul", {constant(g, t, {}, 23, 0.5f, 2.0f), shifted})->output(0);
       }},
      {"mul-sub", [&](Graph& g, Value* x, DType t) {
         Value* scaled = g.add_node("Mul", {x, constant(g, t, {1, 3, 1, 1}, 24, -2.0f, 2.0f)})->output(0);
         return g.add_node("Sub", {scaled, constant(g, t, {1, 3, 1, 1}, 25, -1.0f, 1.0f)})->output(0);
       }},
      {"k minus x", [&](Graph& g, Value* x, DType t) {
         return g.add_node("Sub", {constant(g, t, {3, 1, 1}, 26, -1.0f, 1.0f), x})->output(0);
       }},
  };
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const auto& [form, build] : forms) {
      for (int64_t group : {1, 3}) {
        SCOPED_TRACE(std::string(form) + " " + std::string(dtype_name(dtype)) + " group " + std::to_string(group));
        Graph g("normalized_conv");
        Value* x = g.add_input("x", {dtype, Shape{2, 3, 9, 9}});
        Value* w = g.add_constant("w", random_tensor(dtype, {6, 3 / group, 3, 3}, 1));
        Value* b = g.add_constant("b", random_tensor(dtype, {6}, 2));
        g.add_output(g.add_node("Conv", {build(g, x, dtype), w, b}, 1,
                                {{"strides", Attribute(Ints{2, 2})}, {"group", Attribute(group)}})->output(0));
        finish(g);
        auto folded = g.clone();
        PassContext ctx;
        EXPECT_TRUE(make_pass("conv_input_affine_folding")->run(*folded, ctx));
        finish(*folded);
        ASSERT_EQ(folded->num_nodes(), 1u) << "the conv alone";
        EXPECT_EQ(folded->nodes().front()->input(0), folded->inputs().front());
        Tensor input = random_tensor(dtype, {2, 3, 9, 9}, 3, 0.0f, 1.0f);
        Tensor before = evaluate_graph(g, {{"x", input}})[0], after = evaluate_graph(*folded, {{"x", input}})[0];
        EXPECT_LT(max_relative_difference(before, after), dtype == DType::kFloat32 ? 1e-5 : 1e-12);
      }
    }
  }
}

// A shift does not fold into a conv that pads (the padding zeros come after
// the shift); a pure scale does. A normalized value read twice stays.
TEST(ConvInputAffineFolding, RespectsPaddingAndOtherReaders) {
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    Graph g("normalized_conv");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 3, 8, 8}});
    Value* scale = g.add_constant("scale", random_tensor(DType::kFloat32, {3, 1, 1}, 4, 0.5f, 2.0f));
    Value* shift = g.add_constant("shift", random_tensor(DType::kFloat32, {3, 1, 1}, 5));
    Value* normalized = g.add_node("Mul", {x, scale})->output(0);
    if (which != 1) normalized = g.add_node("Add", {normalized, shift})->output(0);
    Value* w = g.add_constant("w", random_tensor(DType::kFloat32, {4, 3, 3, 3}, 6));
    g.add_output(g.add_node("Conv", {normalized, w}, 1, {{"pads", Attribute(Ints{1, 1, 1, 1})}})->output(0));
    if (which == 2) g.add_output(normalized);
    finish(g);
    auto folded = g.clone();
    PassContext ctx;
    bool changed = make_pass("conv_input_affine_folding")->run(*folded, ctx);
    EXPECT_EQ(changed, which == 1) << "only the pure scale folds";
    finish(*folded);
    Tensor input = random_tensor(DType::kFloat32, {1, 3, 8, 8}, 7);
    Tensor before = evaluate_graph(g, {{"x", input}})[0], after = evaluate_graph(*folded, {{"x", input}})[0];
    EXPECT_LT(max_relative_difference(before, after), 1e-5);
  }
}

// Conv + BatchNormalization, its weights and statistics random constants.
std::unique_ptr<Graph> conv_batch_norm_graph() {
  auto g = std::make_unique<Graph>("conv_bn");
  Value* x = g->add_input("x", {DType::kFloat32, Shape{1, 3, 7, 7}});
  Value* w = g->add_constant("w", random_tensor(DType::kFloat32, {5, 3, 3, 3}, 30));
  Value* y = g->add_node("Conv", {x, w}, 1, {{"pads", Attribute(Ints{1, 1, 1, 1})}})->output(0);
  std::vector<Value*> bn_inputs = {y};
  const char* names[] = {"scale", "shift", "mean", "var"};
  for (uint32_t i = 0; i < 4; ++i) {
    bn_inputs.push_back(g->add_constant(names[i], random_tensor(DType::kFloat32, {5}, 31 + i, i == 3 ? 0.5f : -1.0f, 2.0f)));
  }
  g->add_output(g->add_node("BatchNormalization", bn_inputs)->output(0));
  finish(*g);
  return g;
}

// BatchNorm folding scales the conv's weights where they are when no one
// else holds them (a loaded model handed to compile()), and into a copy when
// someone does (a graph and its clone share their constants): the original
// then keeps its weights, bit for bit.
TEST(ConvBatchNormFolding, ScalesWeightsInPlaceOnlyWhenNoOneElseHoldsThem) {
  const std::unique_ptr<Graph> reference = conv_batch_norm_graph();
  const Tensor input = random_tensor(DType::kFloat32, {1, 3, 7, 7}, 40);
  const Tensor expected = evaluate_graph(*reference, {{"x", input}})[0];
  auto folded_weights = [](const Graph& g) -> const Tensor& {
    for (const Node* node : g.nodes()) {
      if (node->op_type() == "Conv") return node->input(1)->data();
    }
    throw Error(ErrorKind::kInternal, "no Conv left");
  };

  std::unique_ptr<Graph> owned = conv_batch_norm_graph();
  const void* weights = folded_weights(*owned).raw_data();
  PassContext ctx;
  ASSERT_TRUE(make_pass("conv_batch_norm_folding")->run(*owned, ctx));
  finish(*owned);
  EXPECT_EQ(count_ops(*owned, "BatchNormalization"), 0);
  EXPECT_EQ(folded_weights(*owned).raw_data(), weights) << "scaled in place";
  EXPECT_LT(max_relative_difference(expected, evaluate_graph(*owned, {{"x", input}})[0]), 1e-5);

  const Tensor original = folded_weights(*reference).clone();
  auto copy = reference->clone();
  ASSERT_TRUE(make_pass("conv_batch_norm_folding")->run(*copy, ctx));
  finish(*copy);
  EXPECT_NE(folded_weights(*copy).raw_data(), folded_weights(*reference).raw_data());
  EXPECT_TRUE(folded_weights(*reference).bitwise_equal(original)) << "the shared weights were written";
  EXPECT_LT(max_relative_difference(expected, evaluate_graph(*copy, {{"x", input}})[0]), 1e-5);
  EXPECT_LT(max_relative_difference(expected, evaluate_graph(*reference, {{"x", input}})[0]), 1e-7);
}

TEST(ChannelsLastLayout, LeavesWeightsThatChangeAndOtherDtypesAlone) {
  Graph g("trainable");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 3, 8, 8}});
  Value* w = g.add_persistent("w", {DType::kFloat32, Shape{4, 3, 3, 3}}, PersistentRole::kParameter,
                              random_tensor(DType::kFloat32, {4, 3, 3, 3}, 1));
  g.add_output(g.add_node("Conv", {x, w})->output(0));
  Value* x64 = g.add_input("x64", {DType::kFloat64, Shape{1, 3, 8, 8}});
  Value* w64 = g.add_constant("w64", random_tensor(DType::kFloat64, {4, 3, 3, 3}, 2));
  g.add_output(g.add_node("Conv", {x64, w64})->output(0));
  finish(g);
  PassContext ctx;
  EXPECT_FALSE(ChannelsLastLayout().run(g, ctx));
}

// The full level-3 pipeline keeps the graph valid and the outputs equal.
TEST(ChannelsLastLayout, InTheInferencePipeline) {
  auto g = small_conv_net();
  auto optimized = g->clone();
  PassContext ctx;
  inference_pipeline(3)->run(*optimized, ctx);
  EXPECT_EQ(count_ops(*optimized, "Relu"), 0) << "each follows a conv, the one after the residual Add included";
  EXPECT_EQ(count_ops(*optimized, "Add"), 0) << "the residual Add is the conv's sum post-op";
  Tensor x = random_tensor(DType::kFloat32, {2, 3, 16, 16}, 10, 0.0f, 1.0f);
  EXPECT_LT(max_relative_difference(evaluate_graph(*g, {{"x", x}})[0], evaluate_graph(*optimized, {{"x", x}})[0]), 1e-5);
}

// Compiled at level 3 with static shapes, the memory planner writes each
// residual FusedConv's output over its addend Z (FusedConv's in-place
// input); the session's outputs match the unoptimized graph.
TEST(ChannelsLastLayout, CompiledPlanRunsTheResidualInPlace) {
  auto g = small_conv_net();
  CompileOptions options;
  options.opt_level = 3;
  std::shared_ptr<const Plan> plan = compile(*g, options);
  int residual = 0;
  for (const Node* node : plan->graph().nodes()) {
    if (node->op_type() != "FusedConv" || node->num_inputs() < 4 || node->input(3) == nullptr) continue;
    ++residual;
    const BufferSlot* z = plan->memory().find(node->input(3));
    const BufferSlot* y = plan->memory().find(node->output(0));
    ASSERT_NE(z, nullptr);
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(z->offset, y->offset) << node->name();
    EXPECT_TRUE(y->in_place);
  }
  EXPECT_EQ(residual, 1);
  Session session(plan);
  for (uint32_t seed : {11u, 12u}) {
    Tensor x = random_tensor(DType::kFloat32, {2, 3, 16, 16}, seed, 0.0f, 1.0f);
    EXPECT_LT(max_relative_difference(evaluate_graph(*g, {{"x", x}})[0], session.run({{"x", x}})[0]), 1e-5);
  }
}

// With a symbolic batch the plan has nothing to plan at compile time; the
// session plans memory for each batch size it is fed (the residual in place
// included), and the results match the written-out graph for each, in any order.
TEST(ChannelsLastLayout, SymbolicBatchIsPlannedPerFedShape) {
  auto g = small_conv_net(Dim::symbol("N"));
  CompileOptions options;
  options.opt_level = 3;
  std::shared_ptr<const Plan> plan = compile(*g, options);
  EXPECT_EQ(plan->memory().planned_bytes(), 0) << "every intermediate has the symbolic batch";
  Session session(plan);
  for (int64_t batch : {2, 3, 2, 1}) {
    Tensor x = random_tensor(DType::kFloat32, {batch, 3, 16, 16}, static_cast<uint32_t>(30 + batch), 0.0f, 1.0f);
    EXPECT_LT(max_relative_difference(evaluate_graph(*g, {{"x", x}})[0], session.run({{"x", x}})[0]), 1e-5) << batch;
  }
  // Planned, a run allocates its arena and the output; unplanned, every intermediate.
  options.plan_memory = false;
  Session unplanned(compile(*g, options));
  Tensor x = random_tensor(DType::kFloat32, {2, 3, 16, 16}, 40, 0.0f, 1.0f);
  auto allocations = [&](Session& s) {
    s.run({{"x", x}});
    int64_t before = s.memory_stats(Device::cpu()).stats.num_allocations;
    s.run({{"x", x}});
    return s.memory_stats(Device::cpu()).stats.num_allocations - before;
  };
  int64_t planned_allocations = allocations(session), unplanned_allocations = allocations(unplanned);
  std::printf("allocations per run: planned %ld, unplanned %ld\n", static_cast<long>(planned_allocations),
              static_cast<long>(unplanned_allocations));
  EXPECT_LT(planned_allocations, unplanned_allocations);
}

// Two rules feeding each other under one driver: Neg(Neg(x)) -> x, and
// Abs(Neg(x)) -> Abs(x); the graph output keeps its name.
class DoubleNegation final : public RewriteRule {
 public:
  std::string name() const override { return "double_negation"; }
  std::vector<std::string> root_ops() const override { return {"Neg"}; }
  bool apply(Node& outer, Rewriter& rw) override {
    Node* inner = rw.producer_of(outer.input(0), "Neg");
    if (inner == nullptr) return false;
    Node* identity = rw.graph().add_node("Identity", {inner->input(0)});
    identity->output(0)->set_type(outer.output(0)->type());
    rw.replace(outer, identity->output(0));
    return true;
  }
};
class AbsOfNegation final : public RewriteRule {
 public:
  std::string name() const override { return "abs_of_negation"; }
  std::vector<std::string> root_ops() const override { return {"Abs"}; }
  bool apply(Node& abs, Rewriter& rw) override {
    Node* neg = rw.producer_of(abs.input(0), "Neg");
    if (neg == nullptr) return false;
    Node* direct = rw.graph().add_node("Abs", {neg->input(0)});
    direct->output(0)->set_type(abs.output(0)->type());
    rw.replace(abs, direct->output(0));
    return true;
  }
};

TEST(RewriteDriver, RunsRulesToAFixedPointAndKeepsOutputNames) {
  Graph g("negations");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{5}});
  Value* n1 = g.add_node("Neg", {x})->output(0);
  Value* n2 = g.add_node("Neg", {n1})->output(0);
  Value* n3 = g.add_node("Neg", {n2})->output(0);
  Value* out = g.add_node("Abs", {n3}, 1, {}, "result")->output(0);
  g.add_output(out);
  finish(g);
  RewriteDriver driver("negations", make_rules<DoubleNegation, AbsOfNegation>());
  PassContext ctx;
  EXPECT_TRUE(driver.run(g, ctx));
  finish(g);
  EXPECT_EQ(count_ops(g, "Neg"), 0) << "Abs(Neg(Neg(Neg(x)))) -> Abs(Neg(x)) -> Abs(x), or the other way round";
  EXPECT_EQ(g.outputs().front()->name(), "result:0");
  EXPECT_FALSE(driver.run(g, ctx)) << "a second run finds nothing";
  Tensor input = random_tensor(DType::kFloat32, {5}, 4);
  Tensor y = evaluate_graph(g, {{"x", input}})[0];
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(y.data<float>()[i], std::abs(input.data<float>()[i]));
}

}  // namespace
}  // namespace weir
