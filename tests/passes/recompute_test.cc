// Recompute (passes/memory/recompute): the training step computes the same
// parameters with and without it, its planned and measured peak memory
// drop, and a memory budget is met or refused with the reachable minimum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "passes/memory/recompute.h"
#include "passes/pass.h"
#include "runtime/caching_allocator.h"
#include "runtime/memory_estimate.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace weir {
namespace {

struct DeepMlp {
  models::ClassifierGraph graph;
  TrainingGraph step;
};

DeepMlp deep_mlp(int64_t batch, int64_t layers, int64_t width, double dropout, const Strategy& strategy,
                 OptimizerKind kind = OptimizerKind::kAdam) {
  models::ZooOptions zoo;
  zoo.mlp_layers = layers;
  zoo.mlp_width = width;
  zoo.mlp_dropout = dropout;
  zoo.image_size = 8;
  DeepMlp mlp{models::build_classifier("mlp", batch, /*training=*/true, zoo), {}};
  mlp.step = minimize(*mlp.graph.graph, mlp.graph.loss, {.kind = kind}, strategy);
  return mlp;
}

std::map<std::string, Tensor> feeds_for(const DeepMlp& mlp, int64_t batch, int step) {
  Tensor x = Tensor::from_vector(testing::random_floats(static_cast<size_t>(batch * 64), 40 + static_cast<uint32_t>(step), 0.0f, 1.0f),
                                 {batch, 1, 8, 8});
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<size_t>(i)] = (i * 7 + step) % 10;
  std::map<std::string, Tensor> feeds = {{"x", x}, {"labels", Tensor::from_vector(labels, {batch})},
                                         {mlp.step.lr_input, Tensor::scalar(1e-2f)}};
  if (!mlp.step.step_input.empty()) feeds[mlp.step.step_input] = Tensor::scalar<int64_t>(step + 1);
  return feeds;
}

Strategy recompute_strategy(RecomputeMode mode, std::vector<std::string> checkpoints = {}, int64_t budget = 0) {
  Strategy strategy;
  strategy.recompute.mode = mode;
  strategy.recompute.checkpoints = std::move(checkpoints);
  strategy.recompute.memory_budget = budget;
  return strategy;
}

double max_difference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a.data<float>()[i]) - static_cast<double>(b.data<float>()[i])));
  }
  return worst;
}

// Runs `steps` training steps of both and compares losses and parameters.
void expect_same_training(DeepMlp& a, DeepMlp& b, int64_t batch, int steps, double tolerance) {
  Session sa(compile(*a.graph.graph)), sb(compile(*b.graph.graph));
  for (int i = 0; i < steps; ++i) {
    auto feeds = feeds_for(a, batch, i);
    float la = sa.run(feeds)[0].data<float>()[0];
    float lb = sb.run(feeds)[0].data<float>()[0];
    EXPECT_NEAR(la, lb, tolerance) << "loss of step " << i;
  }
  ASSERT_EQ(a.step.parameters, b.step.parameters);
  for (const std::string& name : a.step.parameters) {
    EXPECT_LE(max_difference(sa.state(name), sb.state(name)), tolerance) << name;
  }
}

TEST(Recompute, SameParametersWithDropoutReplayed) {
  const int64_t batch = 16;
  DeepMlp plain = deep_mlp(batch, 8, 32, /*dropout=*/0.25, {});
  DeepMlp recomputed = deep_mlp(batch, 8, 32, 0.25, recompute_strategy(RecomputeMode::kAuto));
  EXPECT_GT(recomputed.step.recomputed_nodes, 0);
  // The recomputed Dropouts draw the original masks: otherwise the
  // gradients, and so the parameters, would differ at once.
  int dropout_clones = 0;
  for (const Node* node : recomputed.graph.graph->nodes()) {
    dropout_clones += node->op_type() == "Dropout" && node->name().find("/recompute") != std::string::npos;
  }
  EXPECT_GT(dropout_clones, 0);
  expect_same_training(plain, recomputed, batch, 3, 0.0);
}

TEST(Recompute, NamedCheckpointsAreKeptAndTheRestCloned) {
  DeepMlp plain = deep_mlp(8, 6, 16, 0.0, {});
  std::vector<std::string> candidates = recompute_candidates(*plain.graph.graph, "loss");
  ASSERT_GE(candidates.size(), 10u);
  std::vector<std::string> checkpoints = {candidates[4], candidates[9]};
  DeepMlp named = deep_mlp(8, 6, 16, 0.0, recompute_strategy(RecomputeMode::kCheckpoints, checkpoints));
  EXPECT_EQ(named.step.recompute_checkpoints, checkpoints);
  const Graph& g = *named.graph.graph;
  // Clones are named "<original>/recompute<suffix>": none of a checkpoint's producer.
  for (const std::string& name : checkpoints) {
    const std::string prefix = g.find_value(name)->producer()->name() + "/recompute";
    for (const Node* node : g.nodes()) EXPECT_NE(node->name().rfind(prefix, 0), 0u) << name << " is kept, not cloned";
  }
  // Clones run on the step's in-order stream and wait for the backward pass (control inputs).
  int roots_waiting = 0;
  for (const Node* node : g.nodes()) {
    if (node->name().find("/recompute") == std::string::npos) continue;
    EXPECT_EQ(node->stream(), kRecomputeStream);
    roots_waiting += !node->control_inputs().empty();
  }
  EXPECT_GT(roots_waiting, 0);
  expect_same_training(plain, named, 8, 2, 0.0);
}

TEST(Recompute, PlannedAndMeasuredPeakDrop) {
  const int64_t batch = 512;
  DeepMlp plain = deep_mlp(batch, 16, 64, 0.0, {}, OptimizerKind::kSgd);
  DeepMlp recomputed = deep_mlp(batch, 16, 64, 0.0, recompute_strategy(RecomputeMode::kAuto), OptimizerKind::kSgd);
  auto plain_plan = compile(*plain.graph.graph);
  auto recomputed_plan = compile(*recomputed.graph.graph);
  int64_t planned_plain = plain_plan->memory().planned_bytes(), planned_recomputed = recomputed_plan->memory().planned_bytes();
  Session sa(plain_plan), sb(recomputed_plan);
  auto feeds = feeds_for(plain, batch, 0);
  // The statistics are the process's caching allocator's: one session at a time.
  sa.reset_peak_memory();
  sa.run(feeds);
  int64_t measured_plain = sa.memory_stats(Device::cpu()).stats.peak_bytes;
  sb.reset_peak_memory();
  sb.run(feeds);
  int64_t measured_recomputed = sb.memory_stats(Device::cpu()).stats.peak_bytes;
  std::printf("16-layer MLP, batch 512: planned arena %lld -> %lld bytes, measured run peak %lld -> %lld bytes, "
              "%zu checkpoints, %d nodes recomputed\n",
              static_cast<long long>(planned_plain), static_cast<long long>(planned_recomputed),
              static_cast<long long>(measured_plain), static_cast<long long>(measured_recomputed),
              recomputed.step.recompute_checkpoints.size(), recomputed.step.recomputed_nodes);
  EXPECT_LT(planned_recomputed * 2, planned_plain);
  EXPECT_LT(measured_recomputed * 2, measured_plain);
  // The estimate the pass chose by is the one the runtime plans.
  EXPECT_EQ(recomputed.step.peak_bytes_after_recompute,
            estimate_memory(*recomputed.graph.graph->clone()).total());
}

// The lowest peak a refusal names ("... the lowest estimated peak with recompute is N bytes ..."), or -1.
int64_t lowest_peak_named(const std::string& message) {
  const std::string marker = "the lowest estimated peak with recompute is ";
  size_t at = message.find(marker);
  if (at == std::string::npos) return -1;
  return std::stoll(message.substr(at + marker.size()));
}

TEST(Recompute, MemoryBudgetIsMetOrRefusedWithTheMinimum) {
  const int64_t batch = 256;
  DeepMlp plain = deep_mlp(batch, 12, 64, 0.0, {}, OptimizerKind::kSgd);
  MemoryEstimate baseline = estimate_memory(*plain.graph.graph->clone());

  // Far below anything reachable: refused, naming the budget and the lowest peak it reached.
  const int64_t hopeless = baseline.total() / 100;
  std::string message = testing::error_of(
      [&] { deep_mlp(batch, 12, 64, 0.0, recompute_strategy(RecomputeMode::kAuto, {}, hopeless), OptimizerKind::kSgd); },
      ErrorKind::kInvalidArgument);
  EXPECT_NE(message.find("cannot be met"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(hopeless)), std::string::npos) << message;
  const int64_t minimum = lowest_peak_named(message);
  ASSERT_GT(minimum, hopeless) << message;
  ASSERT_LT(minimum, baseline.total()) << message;

  // The minimum it named is reachable.
  DeepMlp lowest = deep_mlp(batch, 12, 64, 0.0, recompute_strategy(RecomputeMode::kAuto, {}, minimum), OptimizerKind::kSgd);
  EXPECT_LE(lowest.step.peak_bytes_after_recompute, minimum);

  // A budget between the two: met, and the run's measured memory stays under it.
  int64_t budget = (minimum + baseline.total()) / 2;
  DeepMlp fitted = deep_mlp(batch, 12, 64, 0.0, recompute_strategy(RecomputeMode::kAuto, {}, budget), OptimizerKind::kSgd);
  EXPECT_LE(fitted.step.peak_bytes_after_recompute, budget);
  EXPECT_EQ(fitted.step.recompute_budget_bytes, budget);
  Session session(compile(*fitted.graph.graph));
  auto feeds = feeds_for(fitted, batch, 0);
  session.reset_peak_memory();
  session.run(feeds);
  MemoryEstimate resident = estimate_memory(*fitted.graph.graph->clone());
  // The device's peak holds the parameters and optimizer state too: the
  // session keeps them in the device's memory.
  int64_t measured = session.memory_stats(Device::cpu()).stats.peak_bytes + resident.input_bytes;
  std::printf("budget %lld bytes: estimated %lld, measured %lld (device peak, state included, plus inputs); minimum %lld, "
              "without recompute %lld\n",
              static_cast<long long>(budget), static_cast<long long>(fitted.step.peak_bytes_after_recompute),
              static_cast<long long>(measured), static_cast<long long>(minimum), static_cast<long long>(baseline.total()));
  EXPECT_LE(measured, budget);
  // A looser budget recomputes no more.
  EXPECT_LE(fitted.step.recomputed_flops, lowest.step.recomputed_flops);
}

// A BERT-style encoder (models/zoo.h) small enough for a test, deep enough
// for recompute to matter; SGD, so activations dominate its memory.
struct Encoder {
  models::ClassifierGraph graph;
  TrainingGraph step;
};

constexpr int64_t kEncoderBatch = 8, kEncoderSeq = 32;

models::ClassifierGraph encoder_graph(int64_t layers) {
  models::ZooOptions zoo;
  zoo.layers = layers;
  zoo.hidden = 32;
  zoo.heads = 2;
  zoo.seq = kEncoderSeq;
  zoo.vocab = 50;
  return models::build_classifier("bert", kEncoderBatch, /*training=*/true, zoo);
}

Encoder encoder(int64_t layers, const Strategy& strategy) {
  Encoder e{encoder_graph(layers), {}};
  e.step = minimize(*e.graph.graph, e.graph.loss, {.kind = OptimizerKind::kSgd}, strategy);
  return e;
}

std::map<std::string, Tensor> encoder_feeds(const Encoder& e, int step) {
  std::vector<int64_t> ids(static_cast<size_t>(kEncoderBatch * kEncoderSeq));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 13 + static_cast<size_t>(step) * 7) % 50);
  std::vector<int64_t> labels(static_cast<size_t>(kEncoderBatch));
  for (int64_t i = 0; i < kEncoderBatch; ++i) labels[static_cast<size_t>(i)] = (i * 3 + step) % 10;
  return {{e.graph.input, Tensor::from_vector(ids, {kEncoderBatch, kEncoderSeq})},
          {e.graph.labels, Tensor::from_vector(labels, {kEncoderBatch})},
          {e.step.lr_input, Tensor::scalar(0.05f)}};
}

// The Recompute pass run by hand on an encoder's finished step (as minimize() runs it).
struct HandRun {
  Encoder encoder;
  int64_t flops = 0, peak_before = 0, peak_after = 0;
};

HandRun recompute_by_hand(int64_t layers, int64_t budget, bool segments_only) {
  HandRun run{encoder(layers, {}), 0, 0, 0};
  RecomputeOptions options;
  options.loss = run.encoder.graph.loss;
  options.automatic = true;
  options.memory_budget = budget;
  options.segments_only = segments_only;
  options.estimate_peak = [](Graph& g) { return estimate_memory(g).total(); };
  Recompute pass(options);
  PassContext context;
  pass.run(*run.encoder.graph.graph, context);
  run.flops = pass.recomputed_flops();
  run.peak_before = pass.peak_before();
  run.peak_after = pass.peak_after();
  return run;
}

TEST(Recompute, DefaultBudgetIsAThirdOfThePeakOnADeepEncoder) {
  Encoder plain = encoder(8, {});
  const int64_t before = estimate_memory(*plain.graph.graph->clone()).total();
  Encoder recomputed = encoder(8, recompute_strategy(RecomputeMode::kAuto));
  const TrainingGraph& step = recomputed.step;
  std::printf("8-layer encoder: estimated peak %lld -> %lld bytes (budget %lld), %d nodes recomputed, %lld of the forward "
              "pass's %lld FLOPs\n",
              static_cast<long long>(step.peak_bytes_before_recompute), static_cast<long long>(step.peak_bytes_after_recompute),
              static_cast<long long>(step.recompute_budget_bytes), step.recomputed_nodes,
              static_cast<long long>(step.recomputed_flops), static_cast<long long>(step.forward_flops));
  EXPECT_EQ(step.peak_bytes_before_recompute, before);
  EXPECT_EQ(step.recompute_budget_bytes, before / 3);
  EXPECT_LE(step.peak_bytes_after_recompute, before / 3);
  EXPECT_EQ(step.peak_bytes_after_recompute, estimate_memory(*recomputed.graph.graph->clone()).total());
  // Selective: less than the whole forward pass again.
  EXPECT_GT(step.recomputed_flops, 0);
  EXPECT_LT(step.recomputed_flops, step.forward_flops);
  // The planned arena the runtime compiles drops with it.
  EXPECT_LT(compile(*recomputed.graph.graph)->memory().planned_bytes() * 2, compile(*plain.graph.graph)->memory().planned_bytes());
}

TEST(Recompute, CheaperThanTheSegmentChoiceAtTheSameBudget) {
  const int64_t layers = 8;
  HandRun unbudgeted = recompute_by_hand(layers, 0, /*segments_only=*/true);  // the segments' lowest peak
  const int64_t budget = unbudgeted.peak_before / 3;
  ASSERT_LE(unbudgeted.peak_after, budget) << "the segment choice does not reach a third: no comparison";
  HandRun segments = recompute_by_hand(layers, budget, /*segments_only=*/true);
  HandRun chosen = recompute_by_hand(layers, budget, /*segments_only=*/false);
  std::printf("budget %lld bytes: segments recompute %lld FLOPs (peak %lld), the budgeted choice %lld FLOPs (peak %lld)\n",
              static_cast<long long>(budget), static_cast<long long>(segments.flops), static_cast<long long>(segments.peak_after),
              static_cast<long long>(chosen.flops), static_cast<long long>(chosen.peak_after));
  EXPECT_LE(segments.peak_after, budget);
  EXPECT_LE(chosen.peak_after, budget);
  EXPECT_GT(chosen.flops, 0);
  EXPECT_LT(chosen.flops, segments.flops);
}

TEST(Recompute, EncoderTrainsTheSameWithTheBudgetedChoice) {
  // Dropout 0.1 in every block: the recomputed Dropouts replay their masks.
  Encoder plain = encoder(4, {});
  Encoder recomputed = encoder(4, recompute_strategy(RecomputeMode::kAuto));
  ASSERT_GT(recomputed.step.recomputed_nodes, 0);
  Session sa(compile(*plain.graph.graph)), sb(compile(*recomputed.graph.graph));
  for (int i = 0; i < 3; ++i) {
    float la = sa.run(encoder_feeds(plain, i))[0].data<float>()[0];
    float lb = sb.run(encoder_feeds(recomputed, i))[0].data<float>()[0];
    EXPECT_NEAR(la, lb, 1e-6) << "loss of step " << i;
  }
  ASSERT_EQ(plain.step.parameters, recomputed.step.parameters);
  for (const std::string& name : plain.step.parameters) {
    EXPECT_LE(max_difference(sa.state(name), sb.state(name)), 1e-6) << name;
  }
}

// What one run of `plan` holds at its peak, beyond what the process's
// allocator held before the session (other tests' tensors): the session's
// state, arena and the values allocated as they are produced.
int64_t measured_run_peak(const std::shared_ptr<const Plan>& plan, const std::map<std::string, Tensor>& feeds) {
  const int64_t before = device_caching_allocator(Device::cpu()).stats().bytes_in_use;
  Session session(plan);
  session.run(feeds);
  session.reset_peak_memory();
  session.run(feeds);
  return session.memory_stats(Device::cpu()).stats.peak_bytes - before;
}

// The estimate the budget is checked against is what the run holds: the
// arena, the state, and the values the planner leaves to run time (here the
// Reshape(dY, Shape(X)) of the views' gradients, whose dims are symbolic,
// and the Dropouts' outputs), which the run would otherwise add unseen.
// The feeds are the caller's memory, which the estimate counts and the
// session's allocator does not.
TEST(Recompute, EstimateIsTheMeasuredRunPeak) {
  Encoder plain = encoder(4, {});
  Encoder recomputed = encoder(4, recompute_strategy(RecomputeMode::kAuto));
  for (Encoder* e : {&plain, &recomputed}) {
    const MemoryEstimate estimate = estimate_memory(*e->graph.graph->clone());
    const int64_t measured = measured_run_peak(compile(*e->graph.graph), encoder_feeds(*e, 0));
    std::printf("4-layer encoder%s: estimate %lld bytes (%lld of it allocated at run time, %lld fed), measured run peak %lld\n",
                e == &plain ? "" : " with recompute", static_cast<long long>(estimate.total()),
                static_cast<long long>(estimate.run_time_bytes), static_cast<long long>(estimate.input_bytes),
                static_cast<long long>(measured));
    EXPECT_GT(estimate.run_time_bytes, 0);
    EXPECT_LE(measured, estimate.total());
    // Nor far above it: within 2% (the constants, the graph's memory, are
    // counted and not held by the session's allocator).
    EXPECT_GE(measured, (estimate.total() - estimate.input_bytes) * 49 / 50);
    // Without the run-time values the estimate would fall short of the run.
    EXPECT_GT(measured, estimate.total() - estimate.run_time_bytes - estimate.input_bytes);
  }
}

// The default budget, a third of the estimated peak without recompute, is
// met by the run itself, and so is a third of the plain run's peak.
TEST(Recompute, DefaultBudgetIsMetByTheMeasuredRunPeak) {
  Encoder plain = encoder(8, {});
  Encoder recomputed = encoder(8, recompute_strategy(RecomputeMode::kAuto));
  const int64_t measured_plain = measured_run_peak(compile(*plain.graph.graph), encoder_feeds(plain, 0));
  const int64_t measured = measured_run_peak(compile(*recomputed.graph.graph), encoder_feeds(recomputed, 0));
  std::printf("8-layer encoder: measured run peak %lld -> %lld bytes (budget %lld)\n", static_cast<long long>(measured_plain),
              static_cast<long long>(measured), static_cast<long long>(recomputed.step.recompute_budget_bytes));
  ASSERT_GT(recomputed.step.recompute_budget_bytes, 0);
  EXPECT_LE(measured, recomputed.step.recompute_budget_bytes);
  EXPECT_LE(measured * 3, measured_plain);
}

TEST(Recompute, UnreachableBudgetOnTheEncoderNamesItAndTheReachable) {
  const int64_t budget = 4096;
  std::string message = testing::error_of([&] { encoder(4, recompute_strategy(RecomputeMode::kAuto, {}, budget)); },
                                          ErrorKind::kInvalidArgument);
  EXPECT_NE(message.find("memory budget of " + std::to_string(budget) + " bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot be met"), std::string::npos) << message;
  const int64_t minimum = lowest_peak_named(message);
  ASSERT_GT(minimum, budget) << message;
  Encoder reached = encoder(4, recompute_strategy(RecomputeMode::kAuto, {}, minimum));
  EXPECT_LE(reached.step.peak_bytes_after_recompute, minimum);
}

TEST(Recompute, BadCheckpointsAreErrors) {
  for (const char* name : {"nope", "fc1/weight"}) {
    try {
      deep_mlp(4, 2, 8, 0.0, recompute_strategy(RecomputeMode::kCheckpoints, {name}));
      ADD_FAILURE() << name << " was accepted as a checkpoint";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(Recompute, WorksWithMixedPrecision) {
  Strategy amp;
  amp.amp.enabled = true;
  Strategy both = recompute_strategy(RecomputeMode::kAuto);
  both.amp.enabled = true;
  DeepMlp low = deep_mlp(16, 8, 32, 0.1, amp);
  DeepMlp low_recomputed = deep_mlp(16, 8, 32, 0.1, both);
  EXPECT_GT(low_recomputed.step.recomputed_nodes, 0);
  EXPECT_GT(low_recomputed.step.amp_low_precision_nodes, 0);
  expect_same_training(low, low_recomputed, 16, 3, 0.0);
}

}  // namespace
}  // namespace weir
