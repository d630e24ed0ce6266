// Mixed precision (passes/precision/auto_mixed_precision and minimize()'s
// loss scaling): casts only at the boundaries, each value cast once, the
// allow/deny lists honoured, bf16 training close to f32 with f32 master
// weights, fp16 loss scaling skipping overflowed steps, and gradient sums
// written in f32 instead of cast up from bf16 (F32GradientAccumulation).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "core/verifier.h"
#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "ops/graph_evaluator.h"
#include "ops/wide_output.h"
#include "passes/precision/auto_mixed_precision.h"
#include "passes/precision/f32_gradient_accumulation.h"
#include "tests/ops/op_test_util.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace weir {
namespace {

std::map<std::string, Tensor> lenet_feeds(const TrainingGraph& step, int64_t batch, int i) {
  Tensor x = Tensor::from_vector(testing::random_floats(static_cast<size_t>(batch * 784), 70 + static_cast<uint32_t>(i), 0.0f, 1.0f),
                                 {batch, 1, 28, 28});
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t k = 0; k < batch; ++k) labels[static_cast<size_t>(k)] = (k * 3 + i) % 10;
  std::map<std::string, Tensor> feeds = {{"x", x}, {"labels", Tensor::from_vector(labels, {batch})},
                                         {step.lr_input, Tensor::scalar(1e-3f)}};
  if (!step.step_input.empty()) feeds[step.step_input] = Tensor::scalar<int64_t>(i + 1);
  return feeds;
}

TEST(AutoMixedPrecision, CastsOnlyAtTheBoundariesAndOncePerValue) {
  models::ClassifierGraph lenet = models::build_classifier("lenet", 4, /*training=*/true);
  Graph& g = *lenet.graph;
  PassContext ctx;
  AutoMixedPrecision amp({.low = DType::kBFloat16});
  ASSERT_TRUE(amp.run(g, ctx));
  std::map<std::pair<const Value*, DType>, int> casts;
  for (const Node* node : g.nodes()) {
    const std::string& op = node->op_type();
    if (op == "Conv" || op == "Gemm" || op == "MatMul") {
      for (const Value* input : node->inputs()) {
        if (input != nullptr) {
          EXPECT_EQ(input->dtype(), DType::kBFloat16) << node->name();
        }
      }
    }
    if (op == "SoftmaxCrossEntropyLoss") {
      EXPECT_EQ(node->input(0)->dtype(), DType::kFloat32) << "losses stay f32";
    }
    if (op == "Cast") {
      int& count = casts[{node->input(0), node->output(0)->dtype()}];
      EXPECT_EQ(++count, 1) << node->input(0)->name() << " cast twice to one dtype";
      const Node* producer = node->input(0)->producer();
      EXPECT_FALSE(producer != nullptr && producer->op_type() == "Cast" &&
                   producer->input(0)->dtype() == node->output(0)->dtype())
          << "a cast pair " << producer->name() << " -> " << node->name();
    }
  }
  EXPECT_EQ(amp.casts_inserted(), static_cast<int>(casts.size()));
  // Parameters stay f32 (the master copies); the loss keeps its name and dtype.
  for (const Value* p : g.persistents()) {
    EXPECT_EQ(p->dtype(), DType::kFloat32) << p->name();
  }
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "loss");
  EXPECT_EQ(g.outputs()[0]->dtype(), DType::kFloat32);
}

TEST(AutoMixedPrecision, DenyListWinsAndUnknownPrecisionIsAnError) {
  models::ClassifierGraph mlp = models::build_classifier("mlp", 4, /*training=*/false);
  PassContext ctx;
  AutoMixedPrecision amp({.low = DType::kBFloat16, .deny = {"MatMul", "Gemm"}});
  amp.run(*mlp.graph, ctx);
  EXPECT_EQ(amp.low_precision_nodes(), 0);
  EXPECT_EQ(amp.casts_inserted(), 0);
  EXPECT_THROW(parse_amp_dtype("int8"), Error);
  EXPECT_EQ(parse_amp_dtype("fp16"), DType::kFloat16);
  EXPECT_FALSE(amp_needs_loss_scaling(DType::kBFloat16));
  EXPECT_TRUE(amp_needs_loss_scaling(DType::kFloat16));
}

TEST(AutoMixedPrecision, Bf16TrainingTracksF32) {
  const int64_t batch = 16;
  models::ClassifierGraph f32 = models::build_classifier("lenet", batch, true);
  models::ClassifierGraph bf16 = models::build_classifier("lenet", batch, true);
  TrainingGraph s32 = minimize(*f32.graph, f32.loss, {.kind = OptimizerKind::kAdam});
  Strategy strategy;
  strategy.amp.enabled = true;
  TrainingGraph s16 = minimize(*bf16.graph, bf16.loss, {.kind = OptimizerKind::kAdam}, strategy);
  EXPECT_TRUE(s16.loss_scale.empty()) << "bf16 needs no loss scaling";
  EXPECT_GE(s16.amp_low_precision_nodes, 4);
  Session a(compile(*f32.graph)), b(compile(*bf16.graph));
  for (int i = 0; i < 5; ++i) {
    auto feeds = lenet_feeds(s32, batch, i);
    float la = a.run(feeds)[0].data<float>()[0], lb = b.run(feeds)[0].data<float>()[0];
    EXPECT_NEAR(la, lb, 0.02 * std::abs(la)) << "step " << i;
  }
  for (const std::string& name : s32.parameters) {
    Tensor pa = a.state(name), pb = b.state(name);
    ASSERT_EQ(pb.dtype(), DType::kFloat32) << name;
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < pa.num_elements(); ++k) {
      double d = static_cast<double>(pa.data<float>()[k]) - pb.data<float>()[k];
      diff += d * d;
      norm += static_cast<double>(pa.data<float>()[k]) * pa.data<float>()[k];
    }
    // Adam's steps are about lr per element whatever the gradient's size, so
    // where a gradient is near zero bf16 rounding can flip its step: the
    // weights drift apart by a few percent in five steps, not more.
    EXPECT_LT(std::sqrt(diff / norm), 0.1) << name;
  }
}

// A weight gradient's shape: Neg(Cast<f32>(Gemm(A^T, B))) with A [64, 48] and
// B [64, 40] in bf16 (a batch of 64 summed), and a second Cast of a Gemm
// whose bf16 product is also read elsewhere (left alone).
TEST(F32GradientAccumulation, WritesTheSumInF32AndDropsTheCast) {
  Graph g("weight_gradient");
  Value* a = g.add_input("a", {DType::kBFloat16, Shape{64, 48}});
  Value* b = g.add_input("b", {DType::kBFloat16, Shape{64, 40}});
  Node* gemm = g.add_node("Gemm", {a, b}, 1, {{"transA", Attribute(int64_t{1})}}, "dW");
  Node* cast = g.add_node("Cast", {gemm->output(0)}, 1, {{"to", Attribute(static_cast<int64_t>(DType::kFloat32))}}, "dW/to_f32");
  g.add_output(g.add_node("Neg", {cast->output(0)}, 1, {}, "use")->output(0));
  Node* shared = g.add_node("Gemm", {a, b}, 1, {{"transA", Attribute(int64_t{1})}}, "shared");
  Node* shared_cast = g.add_node("Cast", {shared->output(0)}, 1, {{"to", Attribute(static_cast<int64_t>(DType::kFloat32))}}, "shared/to_f32");
  g.add_output(shared_cast->output(0));
  g.add_output(shared->output(0));
  infer_graph_types(g, default_op_registry());

  std::map<std::string, Tensor> feeds = {
      {"a", testing::make_tensor(DType::kBFloat16, testing::random_values(DType::kBFloat16, 64 * 48, 1), {64, 48})},
      {"b", testing::make_tensor(DType::kBFloat16, testing::random_values(DType::kBFloat16, 64 * 40, 2), {64, 40})}};
  std::vector<double> av = testing::to_doubles(feeds["a"]), bv = testing::to_doubles(feeds["b"]);  // as rounded
  std::vector<double> before = testing::to_doubles(evaluate_graph(g, feeds)[0]);
  PassContext ctx;
  F32GradientAccumulation pass;
  ASSERT_TRUE(pass.run(g, ctx));
  EXPECT_EQ(pass.folded_casts(), 1);
  EXPECT_EQ(g.find_node("dW/to_f32"), nullptr);
  ASSERT_NE(g.find_node("shared/to_f32"), nullptr) << "its bf16 product has another reader";
  EXPECT_EQ(g.find_node("dW")->attr(kOutputDtypeAttr).i(), static_cast<int64_t>(DType::kFloat32));
  EXPECT_EQ(g.find_node("dW")->output(0)->dtype(), DType::kFloat32);
  verify_graph(g, default_op_registry());
  std::vector<double> after = testing::to_doubles(evaluate_graph(g, feeds)[0]);

  // Against the f64 sum of the same bf16 values: the rewritten graph to f32
  // rounding, the original only to bf16's.
  double after_error = 0, before_error = 0, largest = 0;
  for (int64_t i = 0; i < 48; ++i) {
    for (int64_t j = 0; j < 40; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < 64; ++k) sum += av[static_cast<size_t>(k * 48 + i)] * bv[static_cast<size_t>(k * 40 + j)];
      size_t at = static_cast<size_t>(i * 40 + j);
      largest = std::max(largest, std::abs(sum));
      after_error = std::max(after_error, std::abs(after[at] + sum));
      before_error = std::max(before_error, std::abs(before[at] + sum));
    }
  }
  EXPECT_LT(after_error, 1e-5 * largest);
  EXPECT_GT(before_error, 1e-4 * largest) << "bf16 rounding should show before the rewrite";
}

TEST(F32GradientAccumulation, MinimizeWritesEveryLenetWeightGradientInF32) {
  models::ClassifierGraph lenet = models::build_classifier("lenet", 8, true);
  Strategy strategy;
  strategy.amp.enabled = true;
  TrainingGraph step = minimize(*lenet.graph, lenet.loss, {.kind = OptimizerKind::kAdam}, strategy);
  // Two convolutions (weight and bias) and two fully connected layers
  // (Gemm and SumToShape): eight gradient sums.
  EXPECT_EQ(step.amp_f32_gradient_sums, 8);
  for (const Node* node : lenet.graph->nodes()) {
    if (node->op_type() != "Adam") continue;
    const Node* producer = node->input(1)->producer();
    ASSERT_NE(producer, nullptr);
    EXPECT_NE(producer->op_type(), "Cast") << node->name() << " reads a cast gradient";
    EXPECT_EQ(node->input(1)->dtype(), DType::kFloat32) << node->name();
  }
}

TEST(LossScaling, OverflowSkipsTheStepHalvesTheScaleThenGrows) {
  const int64_t batch = 8;
  models::ClassifierGraph mlp = models::build_classifier("mlp", batch, true);
  Strategy strategy;
  strategy.amp.enabled = true;
  strategy.amp.dtype = DType::kFloat16;
  strategy.amp.initial_scale = 1 << 22;  // the f16 gradients overflow at first
  strategy.amp.growth_interval = 3;
  TrainingGraph step = minimize(*mlp.graph, mlp.loss, {.kind = OptimizerKind::kAdam}, strategy);
  ASSERT_EQ(step.loss_scale, "loss_scale");
  Session session(compile(*mlp.graph));
  Tensor x = Tensor::from_vector(testing::random_floats(batch * 784, 5, 0.0f, 1.0f), {batch, 1, 28, 28});
  std::map<std::string, Tensor> feeds = {{"x", x}, {"labels", Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {batch})},
                                         {"lr", Tensor::scalar(1e-3f)}, {"step", Tensor::scalar<int64_t>(1)}};
  std::vector<float> scales;
  std::vector<bool> updated;
  int64_t adam_step = 1;
  for (int i = 0; i < 14; ++i) {
    Tensor before = session.state("fc1/weight").clone();
    float scale_before = session.state("loss_scale").data<float>()[0];
    feeds["step"] = Tensor::scalar<int64_t>(adam_step);
    session.run(feeds);
    float scale = session.state("loss_scale").data<float>()[0];
    bool changed = !before.bitwise_equal(session.state("fc1/weight"));
    if (scale < scale_before) {
      EXPECT_FALSE(changed) << "step " << i << " overflowed but updated the weights";
      EXPECT_EQ(scale, scale_before / 2) << "step " << i;
    } else {
      EXPECT_TRUE(changed) << "step " << i << " was clean but skipped";
      ++adam_step;
    }
    scales.push_back(scale);
    updated.push_back(changed);
  }
  // First the scale halves until the gradients fit, then after 3 clean steps it doubles.
  EXPECT_FALSE(updated[0]);
  EXPECT_EQ(scales[0], static_cast<float>(1 << 21));
  bool grew = false;
  for (size_t i = 1; i < scales.size(); ++i) grew = grew || scales[i] == 2 * scales[i - 1];
  EXPECT_TRUE(grew) << "the scale never grew back";
  for (size_t i = 3; i < scales.size(); ++i) {
    if (updated[i] && updated[i - 1] && updated[i - 2] && scales[i - 3] == scales[i - 2] && scales[i - 2] == scales[i - 1]) {
      EXPECT_EQ(scales[i], 2 * scales[i - 1]) << "no growth after 3 clean steps at step " << i;
    }
  }
  int64_t good = session.state("loss_scale/good_steps").data<int64_t>()[0];
  EXPECT_GE(good, 0);
  EXPECT_LT(good, 3);
}

}  // namespace
}  // namespace weir
