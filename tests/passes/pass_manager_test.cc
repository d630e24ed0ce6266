// The inference pipeline and its passes, each checked by running the graph
// before and after on the same random inputs; and the pass manager's
// verification, levels and names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/type_inference.h"
#include "frontend/builder/graph_builder.h"
#include "frontend/nn/functional.h"
#include "models/zoo.h"
#include "ops/graph_evaluator.h"
#include "ops/register_ops.h"
#include "frontend/optim/optimizer.h"
#include "passes/pass_manager.h"
#include "passes/simplify/freeze_parameters.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using testing::random_f64_tensor;

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

void expect_same_outputs(const Graph& before, const Graph& after, const std::map<std::string, Tensor>& feeds,
                         double tolerance = 0) {
  std::vector<Tensor> a = evaluate_graph(before, feeds), b = evaluate_graph(after, feeds);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].sizes(), b[i].sizes());
    ASSERT_EQ(a[i].dtype(), b[i].dtype());
    if (tolerance == 0) {
      EXPECT_TRUE(a[i].bitwise_equal(b[i])) << "output " << i;
    } else {
      for (int64_t j = 0; j < a[i].num_elements(); ++j) {
        EXPECT_NEAR(a[i].data<float>()[j], b[i].data<float>()[j], tolerance);
      }
    }
  }
}

// Identities, a constant sub-graph, a duplicated product, an inference-mode
// Dropout and a dead branch around a small computation on x.
std::unique_ptr<Graph> cluttered_graph() {
  GraphBuilder b("cluttered", 1);
  Var x = b.input("x", {DType::kFloat64, Shape{3, 4}});
  Var w = b.constant(random_f64_tensor({4, 4}, 2), "w");
  Var two = b.constant(random_f64_tensor({4}, 3), "two");
  Var scale = nn::tanh(two * two + two);                                  // all constant: folds
  Var p1 = nn::matmul(b.op("Identity", {x}), w);
  Var p2 = nn::matmul(x, w);                                             // the same product again: CSE
  Var dropped = b.op("Dropout", {p2}, {{"seed", Attribute(int64_t{3})}});  // no training_mode: identity
  Var unused = nn::sigmoid(p1 * p1);                                     // dead
  (void)unused;
  b.output((p1 + dropped) * scale);
  return b.finish();
}

TEST(InferencePipeline, SimplifiesWithoutChangingResults) {
  auto before = cluttered_graph();
  auto after = before->clone();
  PassContext ctx;
  std::vector<std::string> ran;
  auto pipeline = inference_pipeline(3);
  pipeline->set_after_pass([&](const Pass& pass, const Graph&, bool changed) {
    if (changed) ran.push_back(pass.name());
  });
  EXPECT_TRUE(pipeline->run(*after, ctx));
  EXPECT_EQ(ran, (std::vector<std::string>{"identity_elimination", "constant_folding", "common_subexpression_elimination",
                                          "elementwise_fusion", "dead_code_elimination"}));
  EXPECT_EQ(count_ops(*after, "Identity"), 0);
  EXPECT_EQ(count_ops(*after, "Dropout"), 0);
  EXPECT_EQ(count_ops(*after, "Tanh"), 0) << "the constant branch is folded";
  EXPECT_EQ(count_ops(*after, "MatMul"), 1) << "the duplicate product is merged";
  EXPECT_EQ(count_ops(*after, "Sigmoid"), 0) << "the dead branch is removed";
  std::printf("cluttered graph: %zu nodes -> %zu\n", before->num_nodes(), after->num_nodes());
  expect_same_outputs(*before, *after, {{"x", random_f64_tensor({3, 4}, 9)}});
  EXPECT_FALSE(inference_pipeline(3)->run(*after, ctx)) << "a second run changes nothing";
}

TEST(InferencePipeline, CompileRunsItAtTheRequestedLevel) {
  auto graph = cluttered_graph();
  CompileOptions options;
  options.opt_level = 3;
  std::shared_ptr<const Plan> plan = compile(*graph, options);
  EXPECT_EQ(plan->graph().num_nodes(), 3u);
  EXPECT_EQ(compile(*graph)->graph().num_nodes(), graph->num_nodes()) << "level 0 by default";
  options.disabled_passes = {"common_subexpression_elimination"};
  std::shared_ptr<const Plan> without_cse = compile(*graph, options);
  EXPECT_EQ(count_ops(without_cse->graph(), "MatMul") + count_ops(without_cse->graph(), "Gemm"), 2)
      << "both products stay (one may become a Gemm with the bias)";
  Session session(plan);
  Tensor x = random_f64_tensor({3, 4}, 9);
  EXPECT_TRUE(session.run({{"x", x}})[0].bitwise_equal(evaluate_graph(*graph, {{"x", x}})[0]));
}

TEST(InferencePipeline, LevelsAndDisabledPasses) {
  PassContext ctx;
  auto level0 = cluttered_graph();
  EXPECT_FALSE(inference_pipeline(0)->run(*level0, ctx));
  auto level1 = cluttered_graph();
  inference_pipeline(1)->run(*level1, ctx);
  EXPECT_EQ(count_ops(*level1, "MatMul"), 2) << "CSE is level 2";
  auto no_folding = cluttered_graph();
  inference_pipeline(3, {"constant_folding", "elementwise_fusion"})->run(*no_folding, ctx);
  EXPECT_EQ(count_ops(*no_folding, "Tanh"), 1);
  EXPECT_THROW(inference_pipeline(4), Error);
  try {
    inference_pipeline(3, {"constant_fold"});
    FAIL() << "unknown pass accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("constant_folding"), std::string::npos) << e.what();
  }
}

TEST(InferencePipeline, StatefulAndSideEffectNodesAreKept) {
  GraphBuilder b("stateful", 1);
  Var x = b.input("x", {DType::kFloat32, Shape{8}});
  Var ratio = b.scalar(0.5);
  Var on = b.constant(Tensor::scalar<bool>(true), "on");
  Var d1 = b.op("Dropout", {x, ratio, on}, {{"seed", Attribute(int64_t{1})}});
  Var d2 = b.op("Dropout", {x, ratio, on}, {{"seed", Attribute(int64_t{1})}});
  Var c = b.constant(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {8}), "c");
  Var masked = b.op("Dropout", {c, ratio, on}, {{"seed", Attribute(int64_t{2})}});  // constant input, but random
  b.output(d1 + d2 + masked);
  auto graph = b.finish();
  PassContext ctx;
  inference_pipeline(3)->run(*graph, ctx);
  EXPECT_EQ(count_ops(*graph, "Dropout"), 3);
}

// A sequence built from constants stays computed (constants are tensors),
// and the optimized graph runs in a Session to the reference's result.
TEST(InferencePipeline, SequencesOfConstantsAreNotFolded) {
  GraphBuilder b("sequences", 1);
  Var x = b.input("x", {DType::kFloat32, Shape{2}});
  Var c = b.constant(Tensor::from_vector<float>({1, 2}, {2}), "c");
  Var constant_sequence = b.op("SequenceConstruct", {c, c});
  Var mixed = b.op("SequenceInsert", {constant_sequence, x});
  b.output(b.op("ConcatFromSequence", {mixed}, {{"axis", Attribute(int64_t{0})}}));
  auto graph = b.finish();
  Tensor feed = Tensor::from_vector<float>({-3, 4}, {2});
  std::vector<Tensor> before = evaluate_graph(*graph, {{"x", feed}});
  PassContext ctx;
  inference_pipeline(3)->run(*graph, ctx);
  for (const Value* constant : graph->constants()) EXPECT_TRUE(constant->type().is_tensor()) << constant->name();
  EXPECT_EQ(count_ops(*graph, "SequenceConstruct"), 1);
  CompileOptions options;
  options.opt_level = 3;
  Session session(compile(*graph, options));
  std::vector<Tensor> after = session.run({{"x", feed}});
  EXPECT_TRUE(after[0].bitwise_equal(before[0])) << after[0].type_string();
  ASSERT_EQ(after[0].sizes(), (std::vector<int64_t>{6}));
  const float* y = after[0].data<float>();
  EXPECT_EQ(std::vector<float>(y, y + 6), (std::vector<float>{1, 2, 1, 2, -3, 4}));
}

// The fused kernels (oneDNN's bias and activation post-ops, channels-last
// convolutions) round differently from the op-by-op graph: equal within 1e-5.
TEST(InferencePipeline, ZooModelsGiveTheSameLogits) {
  for (std::string name : {"mlp", "lenet", "bert", "mobilenet_v2", "squeezenet"}) {
    models::ZooOptions zoo{.classes = 10, .in_channels = 3, .image_size = 32, .layers = 1, .hidden = 32, .heads = 4, .seq = 6, .vocab = 20};
    if (name == "mlp" || name == "lenet") zoo.in_channels = 1, zoo.image_size = 28;
    models::ClassifierGraph model = models::build_classifier(name, 2, /*training=*/false, zoo);
    auto optimized = model.graph->clone();
    PassContext ctx;
    inference_pipeline(3)->run(*optimized, ctx);
    std::vector<int64_t> sizes = {2};
    sizes.insert(sizes.end(), model.example_shape.begin(), model.example_shape.end());
    Tensor x(model.input_dtype, sizes);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      if (model.input_dtype == DType::kInt64) {
        x.data<int64_t>()[i] = i % 20;
      } else {
        x.data<float>()[i] = static_cast<float>((i * 37) % 101) / 101.0f;
      }
    }
    std::printf("%s: %zu nodes -> %zu\n", name.c_str(), model.graph->num_nodes(), optimized->num_nodes());
    expect_same_outputs(*model.graph, *optimized, {{model.input, x}}, 1e-5);
  }
}

// Inference in bf16 (--amp bf16): the convs and matmuls (fused or not) read
// bf16, the constant weights are stored in bf16 (no Cast reads a constant:
// the second constant folding took them), the outputs keep their f32 type,
// and the logits stay within bf16's error of the f32 pipeline's.
TEST(InferencePipeline, AmpBf16RunsTheConvsAndMatmulsInBf16) {
  // (Not MobileNetV2: at this size and initial BatchNorm statistics its
  // features fade to nothing and the logits are the classifier's bias.)
  for (std::string name : {"resnet18", "squeezenet", "bert"}) {
    SCOPED_TRACE(name);
    models::ZooOptions zoo{.classes = 10, .in_channels = 3, .image_size = 32, .layers = 2, .hidden = 32, .heads = 4, .seq = 6, .vocab = 20};
    models::ClassifierGraph model = models::build_classifier(name, 2, /*training=*/false, zoo);
    auto f32 = model.graph->clone();
    auto bf16 = model.graph->clone();
    PassContext ctx;
    inference_pipeline(3)->run(*f32, ctx);
    inference_pipeline(3, {}, DType::kBFloat16)->run(*bf16, ctx);
    int low_compute = 0, casts = 0;
    for (const Node* node : bf16->nodes()) {
      const std::string& op = node->op_type();
      if (op == "Cast") {
        ++casts;
        EXPECT_FALSE(node->input(0)->is_constant()) << node->name() << " casts a constant at every run";
      }
      if (op == "FusedConv" || op == "Conv" || op == "FusedMatMul" || op == "MatMul" || op == "Gemm" || op == "Attention") {
        EXPECT_EQ(node->input(0)->dtype(), DType::kBFloat16) << node->name() << " (" << op << ")";
        if (node->num_inputs() > 1) {
          EXPECT_EQ(node->input(1)->dtype(), DType::kBFloat16) << node->name();
        }
        ++low_compute;
      }
    }
    EXPECT_GT(low_compute, 2);
    EXPECT_GT(casts, 0);
    for (const Value* out : bf16->outputs()) EXPECT_EQ(out->dtype(), DType::kFloat32) << out->name();

    std::vector<int64_t> sizes = {2};
    sizes.insert(sizes.end(), model.example_shape.begin(), model.example_shape.end());
    Tensor x(model.input_dtype, sizes);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      if (model.input_dtype == DType::kInt64) {
        x.data<int64_t>()[i] = (i * 7) % 20;
      } else {
        x.data<float>()[i] = static_cast<float>((i * 37) % 101) / 101.0f;
      }
    }
    std::vector<Tensor> a = evaluate_graph(*f32, {{model.input, x}}), b = evaluate_graph(*bf16, {{model.input, x}});
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(b[0].dtype(), DType::kFloat32);
    double diff = 0, norm = 0;
    for (int64_t j = 0; j < a[0].num_elements(); ++j) {
      double d = a[0].data<float>()[j] - b[0].data<float>()[j];
      diff += d * d;
      norm += static_cast<double>(a[0].data<float>()[j]) * a[0].data<float>()[j];
    }
    double relative_l2 = std::sqrt(diff / norm);
    std::printf("%s: %d low-precision convs/matmuls, %d casts, logits relative L2 %.3g\n", name.c_str(), low_compute,
                casts, relative_l2);
    EXPECT_GT(relative_l2, 0) << "bf16 cannot be exact: did anything run in bf16?";
    EXPECT_LT(relative_l2, 3e-2);
  }
}

// --amp at level 0 still runs the AMP pass (a choice of precision, not an
// optimization), and disabling it by name turns it off.
TEST(InferencePipeline, AmpAtEveryLevelAndDisabledByName) {
  auto names = [](const Pipeline& p) {
    std::vector<std::string> out;
    for (const auto& pass : p.passes()) out.push_back(pass->name());
    return out;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& n) { return std::find(v.begin(), v.end(), n) != v.end(); };
  EXPECT_TRUE(has(names(*inference_pipeline(0, {}, DType::kBFloat16)), "auto_mixed_precision"));
  EXPECT_FALSE(has(names(*inference_pipeline(3)), "auto_mixed_precision"));
  EXPECT_FALSE(has(names(*inference_pipeline(3, {"auto_mixed_precision"}, DType::kBFloat16)), "auto_mixed_precision"));
  std::vector<std::string> level3 = names(*inference_pipeline(3, {}, DType::kBFloat16));
  auto amp = std::find(level3.begin(), level3.end(), "auto_mixed_precision");
  ASSERT_NE(amp, level3.end());
  ASSERT_NE(amp + 1, level3.end());
  EXPECT_EQ(*(amp + 1), "constant_folding");  // the casts of constant weights fold
  EXPECT_TRUE(has(std::vector<std::string>(amp, level3.end()), "dead_code_elimination"));
}

// Ops that do nothing, pairs that undo each other, and shape arithmetic on
// a static shape: all gone, with the same outputs; a lossy cast pair stays.
TEST(NoOpAndShapeFolding, RemoveWhatDoesNothing) {
  Graph g("noops");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{2, 3, 4}});
  auto node = [&](const std::string& op, std::vector<Value*> in, std::map<std::string, Attribute> attrs = {}) {
    return g.add_node(op, in, 1, attrs)->output(0);
  };
  Value* t = node("Transpose", {x}, {{"perm", Attribute(std::vector<int64_t>{0, 1, 2})}});          // identity perm
  Value* c = node("Cast", {t}, {{"to", Attribute(int64_t{1})}});                                      // f32 -> f32
  Value* p1 = node("Transpose", {c}, {{"perm", Attribute(std::vector<int64_t>{1, 2, 0})}});
  Value* p2 = node("Transpose", {p1}, {{"perm", Attribute(std::vector<int64_t>{2, 0, 1})}});          // undoes p1
  Value* wide = node("Cast", {p2}, {{"to", Attribute(int64_t{11})}});
  Value* back = node("Cast", {wide}, {{"to", Attribute(int64_t{1})}});                                // f32->f64->f32
  Value* half = node("Cast", {back}, {{"to", Attribute(int64_t{10})}});
  Value* lossy = node("Cast", {half}, {{"to", Attribute(int64_t{1})}});                               // f32->f16->f32: stays
  Value* shape = node("Shape", {lossy});                                                              // static: [2,3,4]
  Value* reshaped = node("Reshape", {lossy, shape});                                                  // same shape
  g.add_output(node("Relu", {reshaped}));
  infer_graph_types(g, default_op_registry());
  auto optimized = g.clone();
  PassContext ctx;
  inference_pipeline(1)->run(*optimized, ctx);
  EXPECT_EQ(count_ops(*optimized, "Transpose"), 0);
  EXPECT_EQ(count_ops(*optimized, "Shape"), 0);
  EXPECT_EQ(count_ops(*optimized, "Reshape"), 0);
  EXPECT_EQ(count_ops(*optimized, "Cast"), 2) << "only the lossy f16 round trip is left";
  std::printf("no-op graph: %zu nodes -> %zu\n", g.num_nodes(), optimized->num_nodes());
  Tensor input = Tensor::from_vector(testing::random_floats(24, 4, -3.0f, 3.0f), {2, 3, 4});
  expect_same_outputs(g, *optimized, {{"x", input}});
}

// The Erf form of GELU, in the two groupings exporters write, becomes one
// Gelu node with the same outputs.
TEST(GeluFusion, RecognisesTheErfForm) {
  for (int grouping = 0; grouping < 2; ++grouping) {
    Graph g("gelu");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{4, 16}});
    auto scalar = [&](float v) { return g.add_constant(g.unique_name("c"), Tensor::scalar<float>(v)); };
    auto node = [&](const std::string& op, std::vector<Value*> in) { return g.add_node(op, in)->output(0); };
    Value* e = grouping == 0 ? node("Erf", {node("Div", {x, scalar(1.41421356f)})})
                             : node("Erf", {node("Mul", {x, scalar(0.70710678f)})});
    Value* one_plus = node("Add", {e, scalar(1.0f)});
    Value* y = grouping == 0 ? node("Mul", {node("Mul", {x, one_plus}), scalar(0.5f)})
                             : node("Mul", {node("Mul", {scalar(0.5f), x}), one_plus});
    g.add_output(node("Tanh", {y}));
    infer_graph_types(g, default_op_registry());
    auto fused = g.clone();
    PassContext ctx;
    inference_pipeline(3)->run(*fused, ctx);
    EXPECT_EQ(count_ops(*fused, "Gelu"), 1) << "grouping " << grouping;
    EXPECT_EQ(count_ops(*fused, "Erf"), 0);
    EXPECT_EQ(count_ops(*fused, "Mul"), 0);
    Tensor input = Tensor::from_vector(testing::random_floats(64, 11, -4.0f, 4.0f), {4, 16});
    expect_same_outputs(g, *fused, {{"x", input}}, 1e-6);
  }
  // Not GELU (0.4 instead of 0.5): left alone.
  Graph g("not_gelu");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{8}});
  Value* e = g.add_node("Erf", {g.add_node("Div", {x, g.add_constant("r", Tensor::scalar<float>(1.41421356f))})->output(0)})->output(0);
  Value* a = g.add_node("Add", {e, g.add_constant("one", Tensor::scalar<float>(1.0f))})->output(0);
  Value* m = g.add_node("Mul", {x, a})->output(0);
  g.add_output(g.add_node("Mul", {m, g.add_constant("k", Tensor::scalar<float>(0.4f))})->output(0));
  infer_graph_types(g, default_op_registry());
  PassContext ctx;
  inference_pipeline(3)->run(g, ctx);
  EXPECT_EQ(count_ops(g, "Gelu"), 0);
}

// Layer normalization written out (Pow or Mul for the square, with and
// without the affine part) becomes one LayerNormalization node.
TEST(LayerNormFusion, RecognisesTheDecomposedForm) {
  for (int variant = 0; variant < 2; ++variant) {
    Graph g("decomposed_ln");
    Value* x = g.add_input("x", {DType::kFloat32, Shape{3, 5, 8}});
    auto node = [&](const std::string& op, std::vector<Value*> in, std::map<std::string, Attribute> attrs = {}) {
      return g.add_node(op, in, 1, attrs)->output(0);
    };
    std::map<std::string, Attribute> last_axis = {{"axes", Attribute(std::vector<int64_t>{-1})}};
    Value* mean = node("ReduceMean", {x}, last_axis);
    Value* d = node("Sub", {x, mean});
    Value* square = variant == 0 ? node("Pow", {d, g.add_constant("two", Tensor::scalar<float>(2.0f))}) : node("Mul", {d, d});
    Value* var = node("ReduceMean", {square}, last_axis);
    Value* std_dev = node("Sqrt", {node("Add", {var, g.add_constant("eps", Tensor::scalar<float>(1e-5f))})});
    Value* y = node("Div", {d, std_dev});
    if (variant == 0) {
      y = node("Mul", {y, g.add_constant("gamma", Tensor::from_vector(testing::random_floats(8, 5, 0.5f, 1.5f), {8}))});
      y = node("Add", {y, g.add_constant("beta", Tensor::from_vector(testing::random_floats(8, 6), {8}))});
    }
    g.add_output(node("Relu", {y}));
    infer_graph_types(g, default_op_registry());
    auto fused = g.clone();
    PassContext ctx;
    inference_pipeline(3)->run(*fused, ctx);
    EXPECT_EQ(count_ops(*fused, "LayerNormalization"), 1) << "variant " << variant;
    EXPECT_EQ(count_ops(*fused, "ReduceMean"), 0);
    EXPECT_EQ(count_ops(*fused, "Sqrt"), 0);
    Tensor input = Tensor::from_vector(testing::random_floats(120, 12, -2.0f, 2.0f), {3, 5, 8});
    expect_same_outputs(g, *fused, {{"x", input}}, 1e-5);
  }
}

// ResNet-18 for inference: every BatchNormalization folds into its Conv
// (after freezing the weights), and the logits stay within 1e-4 relative L2.
TEST(ConvBatchNormFolding, ResnetHasNoBatchNormLeft) {
  models::ZooOptions zoo{.classes = 10, .in_channels = 3, .image_size = 32, .resnet_width = 8};
  models::ClassifierGraph model = models::build_classifier("resnet18", 2, /*training=*/false, zoo);
  // Random running statistics, so the folding has something to fold.
  uint32_t seed = 50;
  for (Value* v : model.graph->persistents()) {
    if (v->name().ends_with("running_mean")) v->set_data(Tensor::from_vector(testing::random_floats(static_cast<size_t>(v->data().num_elements()), seed++), v->data().sizes()));
    if (v->name().ends_with("running_var")) {
      std::vector<float> var = testing::random_floats(static_cast<size_t>(v->data().num_elements()), seed++, 0.5f, 2.0f);
      v->set_data(Tensor::from_vector(var, v->data().sizes()));
    }
  }
  auto optimized = model.graph->clone();
  PassContext ctx;
  inference_pipeline(3)->run(*optimized, ctx);
  EXPECT_GT(count_ops(*model.graph, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(*optimized, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(*optimized, "Conv"), 0);
  EXPECT_EQ(count_ops(*optimized, "FusedConv"), count_ops(*model.graph, "Conv"));
  int with_relu = 0, channels_last = 0;
  for (const Node* node : optimized->nodes()) {
    if (node->op_type() != "FusedConv") continue;
    with_relu += node->attr("activation").s() == "Relu";
    channels_last += node->attr("layout").s() == "NHWC";
  }
  EXPECT_EQ(with_relu, 17) << "every conv but the three downsampling shortcuts";
  EXPECT_EQ(channels_last, count_ops(*model.graph, "Conv"));
  EXPECT_EQ(count_ops(*optimized, "Transpose"), 2) << "into the stem conv, and after the global pool (a ReduceMean on channels-last data)";
  EXPECT_EQ(count_ops(*optimized, "ChannelsLastPool"), 1);
  EXPECT_EQ(count_ops(*optimized, "Relu"), 0);
  EXPECT_EQ(count_ops(*optimized, "Add"), 0) << "the eight residual Adds are sum post-ops";
  EXPECT_EQ(count_ops(*optimized, "FusedElementwise"), 1) << "the input standardization, (x - mean) * (1 / std)";
  EXPECT_EQ(count_ops(*optimized, "FusedMatMul"), 1) << "the classifier's MatMul + bias";
  std::printf("resnet18: %zu nodes -> %zu\n", model.graph->num_nodes(), optimized->num_nodes());
  Tensor x = Tensor::from_vector(testing::random_floats(2 * 3 * 32 * 32, 7, 0.0f, 1.0f), {2, 3, 32, 32});
  Tensor before = evaluate_graph(*model.graph, {{"x", x}})[0], after = evaluate_graph(*optimized, {{"x", x}})[0];
  EXPECT_LT(testing::relative_l2(before, after), 1e-4);
}

// Conv + Relu becomes FusedConv: f32 through oneDNN's post-op, f64 through
// the direct loops; both match the unfused graph.
TEST(ConvActivationFusion, MatchesConvThenRelu) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Graph g("conv_relu");
    Value* x = g.add_input("x", {dtype, Shape{2, 3, 9, 9}});
    auto tensor = [&](std::vector<int64_t> sizes, uint32_t seed) {
      Tensor t = random_f64_tensor(sizes, seed);
      return dtype == DType::kFloat64 ? t : Tensor::from_vector(std::vector<float>(t.data<double>(), t.data<double>() + t.num_elements()), sizes);
    };
    Value* w = g.add_constant("w", tensor({4, 3, 3, 3}, 1));
    Value* b = g.add_constant("b", tensor({4}, 2));
    Value* y = g.add_node("Conv", {x, w, b}, 1, {{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})},
                                                 {"strides", Attribute(std::vector<int64_t>{2, 2})}})->output(0);
    g.add_output(g.add_node("Relu", {y})->output(0));
    infer_graph_types(g, default_op_registry());
    auto fused = g.clone();
    PassContext ctx;
    inference_pipeline(3)->run(*fused, ctx);
    EXPECT_EQ(count_ops(*fused, "FusedConv"), 1);
    EXPECT_EQ(count_ops(*fused, "Relu"), 0);
    Tensor input = tensor({2, 3, 9, 9}, 3);
    Tensor a = evaluate_graph(g, {{"x", input}})[0], c = evaluate_graph(*fused, {{"x", input}})[0];
    ASSERT_EQ(a.sizes(), c.sizes());
    int negatives = 0;
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      double u = dtype == DType::kFloat64 ? a.data<double>()[i] : a.data<float>()[i];
      double v = dtype == DType::kFloat64 ? c.data<double>()[i] : c.data<float>()[i];
      EXPECT_NEAR(u, v, 1e-5 * (1 + std::abs(u))) << i;
      EXPECT_GE(v, 0.0);
      negatives += u == 0;
    }
    EXPECT_GT(negatives, 0) << "some outputs were clamped";
  }
}

// A rule's replacement runs where the node it replaces ran: Rewriter::create
// gives the fused node the Conv's device and stream (a fusion used to keep
// the device and drop the stream).
TEST(ConvActivationFusion, TheFusedNodeKeepsDeviceAndStream) {
  Graph g("conv_relu");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{1, 3, 5, 5}});
  Value* w = g.add_constant("w", Tensor::from_vector(std::vector<float>(4 * 3 * 3 * 3, 0.5f), {4, 3, 3, 3}));
  Node* conv = g.add_node("Conv", {x, w}, 1, {}, "conv");
  Node* relu = g.add_node("Relu", {conv->output(0)}, 1, {}, "relu");
  for (Node* node : {conv, relu}) {
    node->set_device(Device::cpu(1));
    node->set_stream("step");
  }
  g.add_output(relu->output(0));
  infer_graph_types(g, default_op_registry());
  PassContext ctx;
  inference_pipeline(3)->run(g, ctx);
  ASSERT_EQ(count_ops(g, "FusedConv"), 1);
  for (const Node* node : g.nodes()) {
    if (node->op_type() != "FusedConv") continue;
    EXPECT_EQ(node->device(), std::optional<Device>(Device::cpu(1)));
    EXPECT_EQ(node->stream(), "step");
  }
}

// The training pipeline on an MLP training step (forward, backward, Adam):
// the step graph shrinks, and three steps on the same batches give the same
// parameters as the unoptimized graph.
TEST(TrainingOptimizationPipeline, KeepsTheTrainingStepExact) {
  models::ClassifierGraph train = models::build_classifier("mlp", 8, /*training=*/true);
  TrainingGraph step = minimize(*train.graph, train.loss, {.kind = OptimizerKind::kAdam});
  auto optimized = train.graph->clone();
  PassContext ctx;
  training_optimization_pipeline(3)->run(*optimized, ctx);
  std::printf("mlp training step: %zu nodes -> %zu\n", train.graph->num_nodes(), optimized->num_nodes());
  EXPECT_LT(optimized->num_nodes(), train.graph->num_nodes());
  Session plain(compile(*train.graph)), fused(compile(*optimized));
  for (int i = 0; i < 3; ++i) {
    Tensor x = Tensor::from_vector(testing::random_floats(8 * 784, 20 + static_cast<uint32_t>(i), 0.0f, 1.0f), {8, 1, 28, 28});
    Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {8});
    std::map<std::string, Tensor> feeds = {{"x", x}, {"labels", labels}, {step.lr_input, Tensor::scalar(1e-3f)}};
    if (!step.step_input.empty()) feeds[step.step_input] = Tensor::scalar<int64_t>(i + 1);
    EXPECT_TRUE(plain.run(feeds)[0].bitwise_equal(fused.run(feeds)[0])) << "loss of step " << i;
  }
  for (const std::string& name : step.parameters) {
    EXPECT_TRUE(plain.state(name).bitwise_equal(fused.state(name))) << name;
  }
}

TEST(FreezeParameters, TrainingGraphsKeepTheirParameters) {
  models::ClassifierGraph train = models::build_classifier("mlp", 4, /*training=*/true);
  minimize(*train.graph, train.loss, {.kind = OptimizerKind::kSgd});
  size_t persistents = train.graph->persistents().size();
  PassContext ctx;
  FreezeParameters freeze;
  EXPECT_FALSE(freeze.run(*train.graph, ctx));
  EXPECT_EQ(train.graph->persistents().size(), persistents);
  models::ClassifierGraph infer = models::build_classifier("mlp", 4, /*training=*/false);
  EXPECT_TRUE(freeze.run(*infer.graph, ctx));
  EXPECT_TRUE(infer.graph->persistents().empty());
  EXPECT_NE(infer.graph->find_value("fc1/weight"), nullptr) << "frozen values keep their names";
  EXPECT_TRUE(infer.graph->find_value("fc1/weight")->is_constant());
}

// Adds an Identity reading the graph's first output until it has added
// `limit` of them (a typed option in the context); counts its runs.
struct CountingOptions {
  int limit = 0;
};
class AddsIdentities final : public Pass {
 public:
  std::string name() const override { return "adds_identities"; }
  bool run(Graph& graph, PassContext& context) override {
    ++runs;
    if (added >= context.options<CountingOptions>().limit) return false;
    graph.add_node("Identity", {graph.outputs().front()});
    ++added;
    return true;
  }
  int runs = 0, added = 0;
};

TEST(FixedPoint, RepeatsUntilNothingChangesOrTheCap) {
  PassContext ctx;
  ctx.options<CountingOptions>().limit = 3;
  auto graph = cluttered_graph();
  auto pass = std::make_unique<AddsIdentities>();
  AddsIdentities* inner = pass.get();
  FixedPoint until_stable(std::move(pass), 10);
  EXPECT_TRUE(until_stable.run(*graph, ctx));
  EXPECT_EQ(inner->added, 3);
  EXPECT_EQ(inner->runs, 4) << "three changing runs, then one that changed nothing";
  auto capped_pass = std::make_unique<AddsIdentities>();
  AddsIdentities* capped_inner = capped_pass.get();
  ctx.options<CountingOptions>().limit = 100;
  FixedPoint capped(std::move(capped_pass), 5);
  EXPECT_TRUE(capped.run(*graph, ctx));
  EXPECT_EQ(capped_inner->runs, 5);
  EXPECT_EQ(capped.name(), "adds_identities*");
}

// A pass that breaks the graph: its output's type no longer matches.
class BreaksTypes final : public Pass {
 public:
  std::string name() const override { return "breaks_types"; }
  bool run(Graph& graph, PassContext&) override {
    Node* node = graph.nodes().front();
    node->add_control_input(graph.nodes().back());  // a cycle
    return true;
  }
};

TEST(Pipeline, AnInvalidGraphNamesThePassThatMadeIt) {
  auto graph = cluttered_graph();
  Pipeline pipeline;
  pipeline.add(std::make_unique<BreaksTypes>());
  PassContext ctx;
  try {
    pipeline.run(*graph, ctx);
    FAIL() << "a broken graph passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("breaks_types"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir
