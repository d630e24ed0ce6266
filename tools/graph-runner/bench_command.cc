#include "tools/graph-runner/bench_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "frontend/train/progress.h"
#include "passes/analysis/flop_estimate.h"
#include "runtime/profiler.h"
#include "runtime/session.h"
#include "tools/graph-runner/model_inputs.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

namespace {

struct BenchArgs {
  std::string model;
  std::vector<std::string> plugins;
  ModelOptions passes;
  std::vector<std::string> inputs;
  int warmup = 5;
  int iterations = 50;
  int threads = 1;
  std::string profile;
  bool verbose = false;
};

// The value at fraction q of the sorted samples (nearest rank).
double percentile(const std::vector<double>& sorted, double q) {
  size_t index = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

void bench(const BenchArgs& args) {
  std::unique_ptr<OpSet> ops = make_op_set(args.plugins);
  std::shared_ptr<const Plan> plan = load_runnable(args.model, *ops, args.passes);
  // Inputs not given with -i are seeded random values: a benchmark needs no data.
  std::map<std::string, Tensor> feeds = model_inputs(plan->graph(), args.model, args.inputs, /*random_rest=*/true);
  SessionOptions options;
  options.inter_op_threads = args.threads;
  Session session(plan, options);
  // Feeds of a GPU go to pinned memory once, so every run's copy of them is
  // a DMA (on a CPU they are where they should be already).
  for (auto& [name, tensor] : feeds) {
    Allocator& memory = session.feed_allocator(name);
    const bool elsewhere = tensor.storage() != nullptr && tensor.storage()->allocator() != &memory;
    if (elsewhere && tensor.device().type == DeviceType::kCpu && !tensor.is_sequence() && !tensor.is_none()) {
      tensor = tensor.clone(memory);
    }
  }
  if (args.verbose) {
    std::cerr << "plan: " << plan->schedule().steps.size() << " steps on " << plan->devices().size()
              << " device(s), planned arena " << plan->memory().planned_bytes() << " bytes\n";
  }
  for (int i = 0; i < args.warmup; ++i) session.run(feeds);
  Profiler profiler;
  RunOptions run_options;
  if (!args.profile.empty()) run_options.profiler = &profiler;
  std::vector<double> ms;
  Progress progress(std::cerr, args.iterations, "bench");
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < args.iterations; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    session.run(feeds, run_options);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    progress.update(i + 1, {{"ms", ms.back()}});
  }
  progress.finish();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::sort(ms.begin(), ms.end());
  std::printf("latency_ms p50=%.3f p90=%.3f p99=%.3f min=%.3f max=%.3f\n", percentile(ms, 0.5), percentile(ms, 0.9),
              percentile(ms, 0.99), ms.front(), ms.back());
  std::printf("throughput: %.1f runs/s over %d runs\n", static_cast<double>(args.iterations) / seconds, args.iterations);
  // What a run computes (passes/analysis/flop_estimate.h: a multiply-add is
  // 2) over the median latency: the rate to set against a device's peak.
  const double flops = static_cast<double>(estimated_flops(plan->graph()));
  std::printf("flops: %.4g GFLOP per run (estimated; symbolic dims count 1), %.4g TFLOP/s at p50\n", flops * 1e-9,
              flops / (percentile(ms, 0.5) * 1e-3) * 1e-12);
  if (!args.profile.empty()) profiler.write_chrome_trace(args.profile);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Run a model repeatedly; print latency percentiles and throughput");
  cmd->add_option("model", args->model, "the model file (.weir, .weirtxt, .weirplan or .onnx)")->required();
  add_model_options(*cmd, args->plugins, args->passes);
  cmd->add_option("-i,--input", args->inputs, "an input as NAME=FILE.npy or NAME=FILE.pb (repeatable); others are seeded random");
  cmd->add_option("--warmup", args->warmup, "untimed runs first (default 5)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--iterations", args->iterations, "timed runs (default 50)")->check(CLI::PositiveNumber);
  cmd->add_option("--threads", args->threads, "inter-op threads (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--profile", args->profile, "write a Chrome/Perfetto trace of the timed runs here");
  cmd->add_flag("--verbose", args->verbose, "print the plan's size to stderr");
  cmd->callback([args] { bench(*args); });
}

}  // namespace weir::tools
