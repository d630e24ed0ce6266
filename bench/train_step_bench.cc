// Training-step time of the zoo's MLP (784-256-10) and LeNet on batch 64
// with Adam: the whole step (forward, backward, update) as one compiled
// graph run by a Session, on fixed random data. The figures to compare with
// are in docs/perf.md (PyTorch 1.13 on the same machine: MLP 1.22 ms,
// LeNet 23.6 ms per step with 2 threads).
//
//   OMP_NUM_THREADS=2 build/release/bench/weir_train_step_bench
//   WEIR_BENCH_PROFILE=1 ...   // also prints where a step's time goes, by op type
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>

#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace {

struct TrainStep {
  std::unique_ptr<weir::Session> session;
  std::map<std::string, weir::Tensor> feeds;
};

weir::Strategy amp_strategy(bool bf16) {
  weir::Strategy strategy;
  strategy.amp.enabled = bf16;
  return strategy;
}

TrainStep make_step(const std::string& model, int64_t batch, const weir::Strategy& strategy = {}) {
  weir::models::ClassifierGraph g = weir::models::build_classifier(model, batch, /*training=*/true);
  weir::TrainingGraph info = weir::minimize(*g.graph, g.loss, {.kind = weir::OptimizerKind::kAdam}, strategy);
  TrainStep step;
  step.session = std::make_unique<weir::Session>(weir::compile(*g.graph));
  std::vector<int64_t> sizes = {batch};
  sizes.insert(sizes.end(), g.example_shape.begin(), g.example_shape.end());
  weir::Tensor x(weir::DType::kFloat32, sizes);
  weir::Tensor y(weir::DType::kInt64, {batch});
  std::mt19937_64 rng(7);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(rng() % 256) / 255.0f;
  for (int64_t i = 0; i < batch; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  step.feeds = {{g.input, x}, {g.labels, y}, {info.lr_input, weir::Tensor::scalar<float>(1e-3f)}};
  if (!info.step_input.empty()) step.feeds[info.step_input] = weir::Tensor::scalar<int64_t>(1);
  return step;
}

void BM_TrainStep(benchmark::State& state, const std::string& model, bool bf16) {
  TrainStep step = make_step(model, 64, amp_strategy(bf16));
  for (int i = 0; i < 3; ++i) step.session->run(step.feeds);  // warm-up: first-touch, oneDNN primitives
  for (auto _ : state) benchmark::DoNotOptimize(step.session->run(step.feeds));
}

BENCHMARK_CAPTURE(BM_TrainStep, mlp, std::string("mlp"), false)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_TrainStep, lenet, std::string("lenet"), false)->Unit(benchmark::kMillisecond)->MinTime(3.0);
// AMP: the same steps with matmul and conv in bf16 (f32 master weights).
BENCHMARK_CAPTURE(BM_TrainStep, mlp_bf16, std::string("mlp"), true)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_TrainStep, lenet_bf16, std::string("lenet"), true)->Unit(benchmark::kMillisecond)->MinTime(3.0);

// Where the time of a step goes, by op type, over 20 profiled steps.
void print_profile(const std::string& model, bool bf16) {
  TrainStep step = make_step(model, 64, amp_strategy(bf16));
  for (int i = 0; i < 3; ++i) step.session->run(step.feeds);
  weir::Profiler profiler;
  weir::RunOptions options;
  options.profiler = &profiler;
  const int runs = 20;
  for (int i = 0; i < runs; ++i) step.session->run(step.feeds, options);
  std::map<std::string, int64_t> by_op;
  int64_t total = 0;
  for (const weir::ProfileEvent& e : profiler.events()) {
    by_op[e.op_type] += e.duration_ns;
    total += e.duration_ns;
  }
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto& [op, ns] : by_op) sorted.emplace_back(ns, op);
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("\n%s%s: kernel time per step %.3f ms\n", model.c_str(), bf16 ? " (bf16 AMP)" : "", static_cast<double>(total) / runs / 1e6);
  for (const auto& [ns, op] : sorted) {
    std::printf("  %-28s %8.3f ms  %5.1f%%\n", op.c_str(), static_cast<double>(ns) / runs / 1e6,
                100.0 * static_cast<double>(ns) / static_cast<double>(total));
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (std::getenv("WEIR_BENCH_PROFILE") != nullptr) {
    print_profile("mlp", false);
    print_profile("lenet", false);
    print_profile("lenet", true);
  }
  return 0;
}
