// The training compiler as passes (passes/training): the pipeline a
// strategy builds, in order; the figures its passes report through the
// pass context; strategies it refuses; and each pass seen through the
// pipeline's after-pass hook with a verified graph.
#include <gtest/gtest.h>

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
                                      "f32_gradient_accumulation"}));
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
  EXPECT_EQ(result.allreduces, 9);  // eight gradients and the loss
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
