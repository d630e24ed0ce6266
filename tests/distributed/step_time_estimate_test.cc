// The α-β model (distributed/collective_cost.h) against its formulas, and
// the step-time schedule (distributed/step_time_estimate.h) on a small
// graph whose timeline is worked out by hand: communication overlaps the
// computation that does not need it, a reader waits for it, gradient merge
// spreads a skippable collective over its steps.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/type_inference.h"
#include "distributed/step_time_estimate.h"
#include "ops/register_ops.h"

namespace weir {
namespace {

TEST(CollectiveCost, RingAlgorithmsFollowTheirFormulas) {
  const LinkModel link{.latency_seconds = 1e-5, .bytes_per_second = 1e9};
  const int64_t n = 8 << 20;
  const CollectiveCost allreduce = collective_cost("AllReduce", 4, n, link);
  EXPECT_EQ(allreduce.messages, 6);
  EXPECT_EQ(allreduce.sent_bytes, n / 4 * 6);  // 2 (p-1)/p n
  EXPECT_DOUBLE_EQ(allreduce.seconds, 6 * 1e-5 + static_cast<double>(n / 4 * 6) / 1e9);
  EXPECT_EQ(collective_cost("ReduceScatter", 4, n, link).sent_bytes, n / 4 * 3);
  EXPECT_EQ(collective_cost("AllGather", 4, n, link).sent_bytes, 3 * n);
  EXPECT_EQ(collective_cost("Broadcast", 4, n, link).sent_bytes, n);
  EXPECT_EQ(collective_cost("AllReduce", 1, n, link).seconds, 0.0);
  // A 2-D allreduce's phases on a 2 x 2 grid send what a ring of 4 sends.
  const int64_t phases = collective_cost("ReduceScatter", 2, n, link).sent_bytes +
                         collective_cost("AllReduce", 2, n / 2, link).sent_bytes +
                         collective_cost("AllGather", 2, n / 2, link).sent_bytes;
  EXPECT_EQ(phases, allreduce.sent_bytes);
  EXPECT_THROW(collective_cost("Send", 2, n, link), Error);
  EXPECT_THROW(collective_cost("AllReduce", 0, n, link), Error);
}

// a = Relu(x), b = Relu(a), r = AllReduce(a), c = Add(b, r): three compute
// nodes of 1000 FLOPs each (1 ms of the 3 ms), an allreduce of 4000 bytes
// on 2 ranks (2 α + 4000 / B = 2.5 ms). a runs 0-1, the allreduce 1-3.5
// beside b (1-2), c waits for it: 3.5-4.5.
std::unique_ptr<Graph> overlapping_step(bool skippable) {
  auto graph = std::make_unique<Graph>("step");
  Value* x = graph->add_input("x", {DType::kFloat32, Shape{1000}});
  Value* a = graph->add_node("Relu", {x}, 1, {}, "a")->output(0);
  Value* b = graph->add_node("Relu", {a}, 1, {}, "b")->output(0);
  std::vector<Value*> inputs = {a};
  if (skippable) inputs.push_back(graph->add_input("skip", {DType::kBool, Shape{}}));
  Value* r = graph->add_node("AllReduce", inputs, 1, {{"reduction", Attribute(std::string("avg"))}, {"tag", Attribute(std::string("g"))}}, "r")->output(0);
  graph->add_output(graph->add_node("Add", {b, r}, 1, {}, "c")->output(0));
  infer_graph_types(*graph, default_op_registry());
  return graph;
}

TEST(StepTimeEstimate, CommunicationOverlapsWhatDoesNotNeedIt) {
  const StepTimeOptions options{.world = 2, .link = {.latency_seconds = 0.25e-3, .bytes_per_second = 4000 / 2e-3},
                                .compute_seconds = 3e-3};
  const StepTimeEstimate estimate = estimate_step_time(*overlapping_step(false), options);
  EXPECT_EQ(estimate.flops, 3000);
  ASSERT_EQ(estimate.collectives.size(), 1u);
  const CollectiveEstimate& r = estimate.collectives[0];
  EXPECT_EQ(r.group_size, 2);
  EXPECT_EQ(r.input_bytes, 4000);
  EXPECT_NEAR(r.ready_seconds, 1e-3, 1e-12);
  EXPECT_NEAR(r.end_seconds, 3.5e-3, 1e-12);
  EXPECT_NEAR(estimate.step_seconds, 4.5e-3, 1e-12);
  EXPECT_NEAR(estimate.exposed_communication_seconds(), 1.5e-3, 1e-12);

  // One rank: nothing to communicate, the step is its compute.
  StepTimeOptions alone = options;
  alone.world = 1;
  EXPECT_NEAR(estimate_step_time(*overlapping_step(false), alone).step_seconds, 3e-3, 1e-12);

  // Communication on the compute cores: nothing overlaps, 3 + 2.5 ms.
  StepTimeOptions shared = options;
  shared.shared_cores = true;
  EXPECT_NEAR(estimate_step_time(*overlapping_step(false), shared).step_seconds, 5.5e-3, 1e-12);

  // Gradient merge over 5 steps: the allreduce costs 0.5 ms a step.
  StepTimeOptions merged = options;
  merged.merge_steps = 5;
  const StepTimeEstimate spread = estimate_step_time(*overlapping_step(true), merged);
  EXPECT_FALSE(spread.collectives[0].every_step);
  EXPECT_NEAR(spread.communication_seconds, 0.5e-3, 1e-12);
  EXPECT_NEAR(spread.step_seconds, 3e-3, 1e-12);  // hidden behind b: c still starts at 2 ms
}

}  // namespace
}  // namespace weir
