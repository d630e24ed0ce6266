// Recompute on a deep training graph: a 24-layer MLP (784-256x24-10, SGD,
// batch 4096 by default) with and without recompute (auto checkpoints):
// planned arena, measured run peak (the session's allocator), the whole
// step's estimated memory with parameters and data, ms/step, and the largest
// parameter difference after the timed steps (same data, same order).
//
//   OMP_NUM_THREADS=2 build/release/bench/weir_recompute_bench [batch] [layers] [steps]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "runtime/memory_estimate.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace {

struct Run {
  int64_t planned = 0, measured = 0, total = 0;
  double ms_per_step = 0;
  std::unique_ptr<weir::Session> session;
  weir::TrainingGraph step;
};

Run run(int64_t batch, int64_t layers, int steps, bool recompute) {
  weir::models::ZooOptions zoo;
  zoo.mlp_layers = layers;
  zoo.mlp_width = 256;
  weir::models::ClassifierGraph g = weir::models::build_classifier("mlp", batch, /*training=*/true, zoo);
  weir::Strategy strategy;
  if (recompute) strategy.recompute.mode = weir::RecomputeMode::kAuto;
  Run r;
  r.step = weir::minimize(*g.graph, g.loss, {.kind = weir::OptimizerKind::kSgd}, strategy);
  r.total = weir::estimate_memory(*g.graph->clone()).total();
  auto plan = weir::compile(*g.graph);
  r.planned = plan->memory().planned_bytes();
  r.session = std::make_unique<weir::Session>(plan);
  weir::Tensor x(weir::DType::kFloat32, {batch, 1, 28, 28});
  weir::Tensor y(weir::DType::kInt64, {batch});
  std::mt19937_64 rng(7);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(rng() % 256) / 255.0f;
  for (int64_t i = 0; i < batch; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  std::map<std::string, weir::Tensor> feeds = {{g.input, x}, {g.labels, y}, {"lr", weir::Tensor::scalar<float>(0.05f)}};
  r.session->run(feeds);  // warm-up: primitives, first touch
  r.session->reset_peak_memory();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) r.session->run(feeds);
  auto end = std::chrono::steady_clock::now();
  r.measured = r.session->memory_stats(weir::Device::cpu()).stats.peak_bytes;
  r.ms_per_step = std::chrono::duration<double, std::milli>(end - start).count() / steps;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int64_t layers = argc > 2 ? std::atoll(argv[2]) : 24;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 10;
  std::printf("MLP 784-256x%lld-10, SGD, batch %lld, %d timed steps after one warm-up\n", static_cast<long long>(layers),
              static_cast<long long>(batch), steps);
  Run plain = run(batch, layers, steps, false);
  Run recomputed = run(batch, layers, steps, true);
  auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  std::printf("%-22s %12s %12s %12s %10s\n", "", "arena MiB", "run peak MiB", "step MiB", "ms/step");
  std::printf("%-22s %12.1f %12.1f %12.1f %10.2f\n", "without recompute", mib(plain.planned), mib(plain.measured),
              mib(plain.total), plain.ms_per_step);
  std::printf("%-22s %12.1f %12.1f %12.1f %10.2f\n", "recompute auto", mib(recomputed.planned), mib(recomputed.measured),
              mib(recomputed.total), recomputed.ms_per_step);
  std::printf("ratios: arena %.3f, run peak %.3f, step memory %.3f, time %.3f (%zu checkpoints, %d nodes recomputed)\n",
              static_cast<double>(recomputed.planned) / plain.planned, static_cast<double>(recomputed.measured) / plain.measured,
              static_cast<double>(recomputed.total) / plain.total, recomputed.ms_per_step / plain.ms_per_step,
              recomputed.step.recompute_checkpoints.size(), recomputed.step.recomputed_nodes);
  double worst = 0;
  for (const std::string& name : plain.step.parameters) {
    weir::Tensor a = plain.session->state(name), b = recomputed.session->state(name);
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]));
    }
  }
  std::printf("largest parameter difference after %d steps: %g\n", steps + 1, worst);
  return 0;
}
