#include "tools/graph-runner/explain_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "core/error.h"
#include "core/model_io.h"
#include "core/type_inference.h"
#include "distributed/step_time_estimate.h"
#include "frontend/optim/optimizer.h"
#include "frontend/strategy/strategy_file.h"
#include "models/zoo.h"
#include "ops/register_ops.h"
#include "ops/threading.h"
#include "passes/analysis/flop_estimate.h"
#include "runtime/memory_estimate.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tools/graph-runner/synthetic_examples.h"

namespace weir::tools {

namespace {

struct ExplainArgs {
  std::string model_file;
  std::string model;
  int world = 2;
  double bandwidth_gbps = 1.2;
  double latency_us = 30;
  std::string strategy_file;
  int64_t batch = 32;
  int64_t image_size = 0;
  std::string optimizer = "momentum";
  double gflops = 0;
  int measure_steps = 3;
  int threads = 1;
  int cores_per_rank = 0;
  int ranks_per_node = 0;
  bool shared_cores = false;
};

std::string bytes_text(double bytes) {
  char text[48];
  if (bytes >= 1 << 20) {
    std::snprintf(text, sizeof text, "%.3g MiB", bytes / (1 << 20));
  } else if (bytes >= 1 << 10) {
    std::snprintf(text, sizeof text, "%.3g KiB", bytes / (1 << 10));
  } else {
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  }
  return text;
}

// The step of one rank of `ranks`, built at the per-rank batch.
struct BuiltStep {
  models::ClassifierGraph graph;
  TrainingGraph training;
};

BuiltStep build_step(const ExplainArgs& args, const models::ZooOptions& zoo, Strategy strategy, int ranks) {
  strategy.data_parallel.ranks = ranks;
  GradientCommunicationStrategy& comm = strategy.communication;
  if (comm.use_hierarchical_allreduce && comm.hierarchical_allreduce_inter_nranks == 0) {
    comm.hierarchical_allreduce_inter_nranks = args.ranks_per_node > 0 ? args.ranks_per_node : ranks;
  }
  BuiltStep step{models::build_classifier(args.model, args.batch, /*training=*/true, zoo), {}};
  OptimizerConfig optimizer;
  optimizer.kind = parse_optimizer_kind(args.optimizer);
  step.training = minimize(*step.graph.graph, step.graph.loss, optimizer, strategy);
  return step;
}

// Seconds one step of `step` (a world of one) takes here: the median of
// --measure-steps runs after a warm-up run, on seeded random batches.
double measure_compute(const BuiltStep& step, const models::ZooOptions& zoo, const ExplainArgs& args) {
  // The rank's cores: each rank of a world of processes on one machine gets
  // its share (tools/graph-runner/launched_world.cc does the same).
  if (args.cores_per_rank > 0) set_intra_op_threads(args.cores_per_rank);
  SessionOptions options;
  options.inter_op_threads = args.threads;
  Session session(compile(*step.graph.graph), options);
  auto [input, labels] = synthetic_examples(step.graph, zoo, args.batch, /*seed=*/7);
  std::map<std::string, Tensor> feeds = {{step.graph.input, input}, {step.graph.labels, labels},
                                         {step.training.lr_input, Tensor::scalar(1e-4f)}};
  std::vector<double> seconds;
  for (int i = 0; i <= args.measure_steps; ++i) {
    if (!step.training.step_input.empty()) feeds[step.training.step_input] = Tensor::scalar<int64_t>(i + 1);
    const auto start = std::chrono::steady_clock::now();
    session.run(feeds);
    if (i > 0) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

struct StepMemory {
  int64_t parameters = 0, optimizer_state = 0, arena = 0, other = 0;
};

StepMemory memory_of(Graph& graph) {
  StepMemory memory;
  for (const Value* value : graph.persistents()) {
    const int64_t bytes = value->shape().is_static()
                              ? value->shape().num_elements() * static_cast<int64_t>(dtype_size(value->dtype()))
                              : 0;
    (value->role() == PersistentRole::kParameter        ? memory.parameters
     : value->role() == PersistentRole::kOptimizerState ? memory.optimizer_state
                                                        : memory.other) += bytes;
  }
  memory.arena = estimate_memory(graph).arena_bytes;
  return memory;
}

std::string group_text(const CollectiveEstimate& c, int world) {
  return c.group_size == world ? "world of " + std::to_string(world) : "groups of " + std::to_string(c.group_size);
}

void print_estimate(const StepTimeEstimate& estimate, int world, const StepMemory& memory, const std::string& compute_source,
                    double one_rank_seconds) {
  std::printf("flops_per_step: %lld (forward, backward and update, each rank)\n", static_cast<long long>(estimate.flops));
  std::printf("memory: parameters %s, optimizer state %s, activations and gradients %s (the memory planner's arena)%s\n",
              bytes_text(static_cast<double>(memory.parameters)).c_str(),
              bytes_text(static_cast<double>(memory.optimizer_state)).c_str(),
              bytes_text(static_cast<double>(memory.arena)).c_str(),
              memory.other > 0 ? (", buffers " + bytes_text(static_cast<double>(memory.other))).c_str() : "");
  std::printf("compute: %.3f ms per step (%s)\n", estimate.compute_seconds * 1e3, compute_source.c_str());
  std::map<std::string, int64_t> sent_by_group;
  int64_t input_bytes = 0;
  for (const CollectiveEstimate& c : estimate.collectives) {
    std::printf("collective %s '%s': %s, %s in, %s sent, %.3f ms, ready at %.3f ms, runs %.3f-%.3f ms%s\n",
                c.op_type.c_str(), c.tag.c_str(), group_text(c, world).c_str(),
                bytes_text(static_cast<double>(c.input_bytes)).c_str(),
                bytes_text(static_cast<double>(c.cost.sent_bytes)).c_str(), c.cost.seconds * 1e3, c.ready_seconds * 1e3,
                c.start_seconds * 1e3, c.end_seconds * 1e3, c.every_step ? "" : " (on update steps only)");
    sent_by_group[group_text(c, world)] += c.cost.sent_bytes;
    input_bytes += c.input_bytes;
  }
  for (const auto& [group, sent] : sent_by_group) {
    std::printf("bytes sent per step in %s: %lld\n", group.c_str(), static_cast<long long>(sent));
  }
  if (!estimate.collectives.empty()) {
    std::printf("communication: %.3f ms per step, %.3f ms of it exposed (not overlapped by computation)\n",
                estimate.communication_seconds * 1e3, estimate.exposed_communication_seconds() * 1e3);
  }
  std::printf("estimated_step_ms: %.3f at %d rank%s\n", estimate.step_seconds * 1e3, world, world == 1 ? "" : "s");
  if (one_rank_seconds > 0) {
    std::printf("scaling_efficiency: %.3f (one rank's step time over this one's, the same batch on each rank)\n",
                one_rank_seconds / estimate.step_seconds);
  }
}

void explain(const ExplainArgs& args) {
  if (args.model.empty() == args.model_file.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "explain needs a saved step MODEL file or --model NAME (one of them)");
  }
  const LinkModel link{.latency_seconds = args.latency_us * 1e-6, .bytes_per_second = args.bandwidth_gbps * 1e9};
  std::printf("link: %.3g GB/s, %.3g us per message (alpha-beta model; ring algorithms)\n", args.bandwidth_gbps, args.latency_us);
  if (!args.model_file.empty()) {
    if (!args.strategy_file.empty() || args.image_size > 0) {
      throw Error(ErrorKind::kInvalidArgument, "--strategy and --image-size shape a step built with --model; a saved "
                                               "step is explained as it is");
    }
    if (!(args.gflops > 0)) {
      throw Error(ErrorKind::kInvalidArgument, "explaining a saved step needs --gflops G (the rank's sustained "
                                               "GFLOP/s) for its compute time; --model NAME measures it here instead")
          .with_file(args.model_file);
    }
    Model model = load_model(args.model_file);
    infer_graph_types(*model.graph, default_op_registry());
    StepTimeOptions options{.world = args.world, .link = link, .shared_cores = args.shared_cores};
    options.compute_seconds = static_cast<double>(compute_flops(*model.graph)) / (args.gflops * 1e9);
    const StepTimeEstimate estimate = estimate_step_time(*model.graph, options);
    std::printf("step: %s, as saved, on each of %d ranks\n", args.model_file.c_str(), args.world);
    print_estimate(estimate, args.world, memory_of(*model.graph), "FLOPs at --gflops", 0);
    return;
  }

  models::ZooOptions zoo;
  if (args.image_size > 0) zoo.image_size = args.image_size;
  Strategy strategy;
  if (!args.strategy_file.empty()) strategy = read_strategy_file(args.strategy_file, strategy);
  BuiltStep one = build_step(args, zoo, strategy, 1);
  const int64_t one_flops = compute_flops(*one.graph.graph);
  double one_seconds = 0;
  std::string source;
  if (args.gflops > 0) {
    one_seconds = static_cast<double>(one_flops) / (args.gflops * 1e9);
    source = "FLOPs at --gflops";
  } else {
    one_seconds = measure_compute(one, zoo, args);
    char text[96];
    std::snprintf(text, sizeof text, "one rank's step measured here, median of %d, %d intra-op thread%s",
                  args.measure_steps, intra_op_threads(), intra_op_threads() == 1 ? "" : "s");
    source = text;
  }
  BuiltStep many = args.world > 1 ? build_step(args, zoo, strategy, args.world) : std::move(one);
  StepTimeOptions options{.world = args.world, .link = link, .merge_steps = many.training.gradient_merge_steps,
                          .shared_cores = args.shared_cores};
  const int64_t flops = compute_flops(*many.graph.graph);
  // The N-rank step adds the buckets' copies and casts: compute scales by FLOPs.
  options.compute_seconds = one_flops > 0 ? one_seconds * static_cast<double>(flops) / static_cast<double>(one_flops) : 0;
  const StepTimeEstimate estimate = estimate_step_time(*many.graph.graph, options);
  std::printf("step: %s, batch %lld per rank, %s optimizer, on each of %d ranks\n", args.model.c_str(),
              static_cast<long long>(args.batch), args.optimizer.c_str(), args.world);
  for (size_t b = 0; b < many.training.buckets.size(); ++b) {
    const GradientBucket& bucket = many.training.buckets[b];
    std::printf("bucket %zu: %zu gradients, %s, %s, stream %s\n", b, bucket.values.size(),
                bytes_text(static_cast<double>(bucket.bytes())).c_str(), std::string(dtype_name(bucket.dtype)).c_str(),
                bucket.stream.c_str());
  }
  if (many.training.gradient_merge_steps > 1) {
    std::printf("gradient merge: %d micro-steps per update; the gradient collectives' cost is spread over them\n",
                many.training.gradient_merge_steps);
  }
  print_estimate(estimate, args.world, memory_of(*many.graph.graph), source, args.world > 1 ? one_seconds : 0);
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto args = std::make_shared<ExplainArgs>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Estimate a data-parallel step on N ranks: FLOPs, memory, collectives and bytes, step time and "
                 "scaling efficiency (alpha-beta model)");
  auto* file = cmd->add_option("MODEL", args->model_file, "a saved training step (train --save-training-graph)");
  cmd->add_option("--model", args->model, "a zoo model to build the step of: mlp, lenet, resnet18, resnet50, "
                                          "mobilenet_v2, squeezenet or bert")
      ->excludes(file);
  cmd->add_option("--world", args->world, "ranks of the data-parallel world (default 2)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--bandwidth", args->bandwidth_gbps,
                  "GB/s of each rank's link (default 1.2: Gloo over loopback on the 2-core machine docs/perf.md "
                  "names)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--latency", args->latency_us, "microseconds per message (default 30)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--strategy", args->strategy_file, "with --model: a JSON strategy file, as train --strategy takes");
  cmd->add_option("--batch", args->batch, "with --model: examples per rank and step (default 32)")->check(CLI::PositiveNumber);
  cmd->add_option("--image-size", args->image_size, "with --model: the image models' input side (default 28)")
      ->check(CLI::Range(int64_t{8}, int64_t{1024}));
  cmd->add_option("--optimizer", args->optimizer, "with --model: sgd, momentum, adagrad, adam, adamw or lamb (default momentum)");
  cmd->add_option("--gflops", args->gflops,
                  "the compute time from FLOPs at this many GFLOP/s per rank, instead of measuring one rank's step "
                  "here (needed for a MODEL file)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--measure-steps", args->measure_steps, "steps timed for the measurement (default 3, after a warm-up)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--threads", args->threads, "inter-op threads of the measured step (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--cores-per-rank", args->cores_per_rank,
                  "intra-op threads of the measured step: the cores each rank will have (default: this machine's)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--shared-cores", args->shared_cores,
                "communication takes the cores that compute (CPU ranks over Gloo), so it overlaps nothing");
  cmd->add_option("--ranks-per-node", args->ranks_per_node,
                  "ranks per node for a hierarchical allreduce whose strategy leaves it to the world (default: one node)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->callback([args] { explain(*args); });
}

}  // namespace weir::tools
