// The training compiler as passes (passes/training): the pipeline a
// strategy builds, in order; the figures its passes report through the
// pass context; strategies it refuses; and each pass seen through the
// pipeline's after-pass hook with a verified graph.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"
#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "passes/training/training_pipeline.h"
#include "passes/training/training_step.h"

namespace weir {
namespace {

std::vector<std::string> pass_names_of(const Pipeline& pipeline) {
  std::vector<std::string> names;
  for (const auto& pass : pipeline.passes()) names.push_back(pass->name());
  return names;
}

TEST(TrainingPipeline, TheStrategyChoosesThePassesInOrder) {
  EXPECT_EQ(pass_names_of(*training_pipeline({}, {.kind = OptimizerKind::kSgd})),
            (std::vector<std::string>{"differentiate", "optimizer_updates"}));
  Strategy everything;
  everything.amp.enabled = true;
  everything.amp.dtype = DType::kFloat16;  // fp16: loss scaling
  everything.recompute.mode = RecomputeMode::kAuto;
  everything.data_parallel.ranks = 2;
  EXPECT_EQ(pass_names_of(*training_pipeline(everything, {.kind = OptimizerKind::kAdam, .clip_global_norm = 1.0})),
            (std::vector<std::string>{"auto_mixed_precision", "scale_loss", "differentiate", "unscale_gradients",
                                      "clip_gradients", "optimizer_updates", "recompute", "data_parallel",
                                      "gradient_buckets", "f32_gradient_accumulation"}));
  everything.communication.fuse_all_reduce_ops = false;  // one AllReduce per gradient
  everything.communication.two_d_allreduce_rows = 2;
  everything.data_parallel.ranks = 4;
  EXPECT_EQ(pass_names_of(*training_pipeline(everything, {.kind = OptimizerKind::kAdam})),
            (std::vector<std::string>{"auto_mixed_precision", "scale_loss", "differentiate", "unscale_gradients",
                                      "optimizer_updates", "recompute", "data_parallel", "gradient_buckets",
                                      "allreduce_topology", "f32_gradient_accumulation"}));
  everything.communication.two_d_allreduce_rows = 0;
  EXPECT_EQ(pass_names_of(*training_pipeline(everything, {.kind = OptimizerKind::kAdam})),
            (std::vector<std::string>{"auto_mixed_precision", "scale_loss", "differentiate", "unscale_gradients",
                                      "optimizer_updates", "recompute", "data_parallel", "f32_gradient_accumulation"}));
}

TEST(TrainingPipeline, PassesReportThroughTheContext) {
  models::ClassifierGraph lenet = models::build_classifier("lenet", 8, /*training=*/true);
  Strategy strategy;
  strategy.amp.enabled = true;
  strategy.amp.dtype = DType::kFloat16;
  strategy.data_parallel.ranks = 2;
  PassContext ctx;
  TrainingStepState& step = ctx.options<TrainingStepState>();
  step.graph.loss = lenet.loss;
  std::unique_ptr<Pipeline> pipeline = training_pipeline(strategy, {.kind = OptimizerKind::kAdam, .clip_global_norm = 5.0});
  std::vector<std::string> seen;
  pipeline->set_after_pass([&](const Pass& pass, const Graph&, bool changed) {
    if (changed) seen.push_back(pass.name());
  });
  pipeline->run(*lenet.graph, ctx);
  EXPECT_EQ(seen, pass_names_of(*pipeline)) << "every pass changed the graph and was verified after it";
  const TrainingGraph& result = step.graph;
  EXPECT_GT(result.amp_low_precision_nodes, 0);
  EXPECT_GT(result.amp_casts, 0);
  EXPECT_EQ(result.loss_scale, "loss_scale");
  EXPECT_FALSE(step.found_inf.empty());
  EXPECT_EQ(result.parameters.size(), 8u);  // LeNet: two convs and two dense layers, weight and bias each
  EXPECT_EQ(step.raw_gradients.size(), result.parameters.size());
  EXPECT_EQ(result.ranks, 2);
  // The eight gradients in buckets, one AllReduce each, and the loss's.
  size_t bucketed = 0;
  for (const GradientBucket& bucket : result.buckets) bucketed += bucket.values.size();
  EXPECT_EQ(bucketed, 8u);
  EXPECT_EQ(result.allreduces, static_cast<int>(result.buckets.size()) + 1);
  EXPECT_EQ(result.amp_f32_gradient_sums, 8);
  EXPECT_EQ(result.step_input, "step");
  EXPECT_EQ(lenet.graph->outputs().front()->name(), lenet.loss);
}

TEST(TrainingPipeline, StrategiesThatCannotBeBuiltAreRefused) {
  Strategy budget_only;
  budget_only.recompute.memory_budget = 1 << 20;
  EXPECT_THROW(training_pipeline(budget_only, {}), Error);
  Strategy no_ranks;
  no_ranks.data_parallel.ranks = 0;
  try {
    training_pipeline(no_ranks, {});
    FAIL() << "zero ranks accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at least 1 rank, got 0"), std::string::npos) << e.what();
  }
  // Gradient communication that cannot be built, each named.
  auto refusal = [](const std::function<void(Strategy&)>& set) {
    Strategy strategy;
    strategy.data_parallel.ranks = 4;
    set(strategy);
    try {
      training_pipeline(strategy, {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal([](Strategy& s) {
              s.communication.use_hierarchical_allreduce = true;
              s.communication.hierarchical_allreduce_inter_nranks = 2;
              s.communication.two_d_allreduce_rows = 2;
            }).find("use_hierarchical_allreduce and two_d_allreduce_rows"),
            std::string::npos);
  EXPECT_NE(refusal([](Strategy& s) { s.communication.two_d_allreduce_rows = 3; }).find("4 ranks do not make a grid of 3 rows"),
            std::string::npos);
  EXPECT_NE(refusal([](Strategy& s) {
              s.communication.use_hierarchical_allreduce = true;
              s.communication.hierarchical_allreduce_inter_nranks = 3;
            }).find("do not make whole nodes of 3"),
            std::string::npos);
  EXPECT_NE(refusal([](Strategy& s) { s.communication.comm_streams = 0; }).find("comm_streams must be 1 to 64, got 0"),
            std::string::npos);
  EXPECT_NE(refusal([](Strategy& s) { s.communication.allreduce_dtype = DType::kInt8; }).find("allreduce_dtype must be"),
            std::string::npos);
  // A loss that reaches no parameter: differentiate says so.
  Graph g("no_params");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{}});
  g.add_persistent("w", {DType::kFloat32, Shape{}}, PersistentRole::kParameter, Tensor::scalar<float>(1));
  Node* loss = g.add_node("Neg", {x}, 1, {}, "loss");
  g.add_output(loss->output(0));
  infer_graph_types(g, default_op_registry());
  try {
    minimize(g, loss->output(0)->name(), {});
    FAIL() << "a loss without parameters was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("depends on no parameter"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir
