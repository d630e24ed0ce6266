// Gradients as views into their bucket: a data-parallel training step with
// gradient buckets, compiled twice from the same graph, once with the
// memory planner placing every gradient inside its bucket and every averaged
// piece inside the AllReduce's output (the default) and once copying them
// (CompileOptions::join_pieces = false, the baseline), run on an in-process
// world of 2 ranks, the two taking turns step by step. Prints per
// configuration the median and fastest step, the time rank
// 0's Concat and Split steps take, the bytes they produce, and the planned
// arena (docs/perf.md).
//
//   OMP_NUM_THREADS=1 build/release/bench/weir_bucket_views_bench [model] [batch per rank] [image size] [steps]
//   (defaults: resnet18 8 32 10)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "runtime/in_process_ranks.h"
#include "runtime/plan.h"
#include "runtime/profiler.h"
#include "runtime/session.h"

namespace {

constexpr int kRanks = 2;

struct Figures {
  double step_ms = 0;       // median
  double min_ms = 0;
  double pack_ms = 0;       // rank 0's Concat and Split steps, per step
  int64_t pack_bytes = 0;   // what they produce, per step
  int64_t arena_bytes = 0;
  int joined = 0;
};

std::vector<std::map<std::string, weir::Tensor>> rank_feeds(const weir::models::ClassifierGraph& g,
                                                            const weir::TrainingGraph& training, int64_t batch,
                                                            int step) {
  std::vector<std::map<std::string, weir::Tensor>> feeds;
  std::mt19937_64 rng(static_cast<uint64_t>(7 + step));
  for (int r = 0; r < kRanks; ++r) {
    std::vector<int64_t> sizes = {batch};
    sizes.insert(sizes.end(), g.example_shape.begin(), g.example_shape.end());
    weir::Tensor x(weir::DType::kFloat32, sizes);
    weir::Tensor y(weir::DType::kInt64, {batch});
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(rng() % 256) / 255.0f;
    for (int64_t i = 0; i < batch; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
    std::map<std::string, weir::Tensor> f = {{g.input, x}, {g.labels, y}, {training.lr_input, weir::Tensor::scalar<float>(1e-3f)}};
    if (!training.step_input.empty()) f[training.step_input] = weir::Tensor::scalar<int64_t>(step + 1);
    feeds.push_back(std::move(f));
  }
  return feeds;
}

// One configuration's plan, world and figures.
struct Configuration {
  std::shared_ptr<const weir::Plan> plan;
  std::unique_ptr<weir::InProcessRanks> world;
  weir::Profiler profiler;
  std::vector<double> times;
};

std::unique_ptr<Configuration> configure(const weir::models::ClassifierGraph& g, bool join) {
  weir::CompileOptions options;
  options.join_pieces = join;
  auto c = std::make_unique<Configuration>();
  c->plan = weir::compile(*g.graph, options);
  c->world = std::make_unique<weir::InProcessRanks>(c->plan, kRanks);
  return c;
}

Figures figures_of(Configuration& c, int steps) {
  Figures figures;
  figures.arena_bytes = c.plan->memory().planned_bytes();
  figures.joined = c.plan->memory().joined_values;
  std::sort(c.times.begin(), c.times.end());
  figures.step_ms = c.times[c.times.size() / 2];
  figures.min_ms = c.times.front();
  for (const weir::ProfileEvent& event : c.profiler.events()) {
    if (event.device != "cpu:0" || (event.op_type != "Concat" && event.op_type != "Split")) continue;
    figures.pack_ms += static_cast<double>(event.duration_ns) / 1e6 / steps;
    figures.pack_bytes += event.bytes / steps;
  }
  return figures;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string model = argc > 1 ? argv[1] : "resnet18";
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 8;
  const int64_t image = argc > 3 ? std::atoll(argv[3]) : 32;
  const int steps = argc > 4 ? std::atoi(argv[4]) : 10;
  weir::models::ZooOptions zoo;
  zoo.image_size = image;
  weir::models::ClassifierGraph g = weir::models::build_classifier(model, batch, /*training=*/true, zoo);
  weir::Strategy strategy;
  strategy.data_parallel.ranks = kRanks;  // buckets: Fleet's defaults (32 MiB, first 1 MiB)
  weir::TrainingGraph training = weir::minimize(*g.graph, g.loss, {.kind = weir::OptimizerKind::kMomentum}, strategy);
  int64_t gradient_bytes = 0;
  for (const weir::GradientBucket& bucket : training.buckets) gradient_bytes += bucket.bytes();
  std::printf("%s, batch %lld per rank, %lldx%lld images, %d in-process ranks, %zu buckets (%.1f MiB), %d steps\n",
              model.c_str(), static_cast<long long>(batch), static_cast<long long>(image), static_cast<long long>(image),
              kRanks, training.buckets.size(), static_cast<double>(gradient_bytes) / (1 << 20), steps);
  std::printf("%-28s %9s %9s %14s %14s %10s %7s\n", "", "median ms", "min ms", "Concat+Split", "their bytes", "arena MiB",
              "joined");
  // The two configurations take turns step by step, so both see the same
  // load on the machine.
  std::vector<std::unique_ptr<Configuration>> configurations;
  for (bool join : {false, true}) configurations.push_back(configure(g, join));
  for (int i = 0; i < 3; ++i) {
    for (auto& c : configurations) c->world->run(rank_feeds(g, training, batch, i));  // warm-up
  }
  for (int i = 0; i < steps; ++i) {
    auto feeds = rank_feeds(g, training, batch, 3 + i);
    for (auto& c : configurations) {
      const auto start = std::chrono::steady_clock::now();
      c->world->run(feeds, {.profiler = &c->profiler});
      c->times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  }
  for (size_t k = 0; k < configurations.size(); ++k) {
    const Figures f = figures_of(*configurations[k], steps);
    std::printf("%-28s %9.1f %9.1f %11.2f ms %14lld %10.1f %7d\n",
                k == 1 ? "gradients inside buckets" : "copied into buckets (base)", f.step_ms, f.min_ms, f.pack_ms,
                static_cast<long long>(f.pack_bytes), static_cast<double>(f.arena_bytes) / (1 << 20), f.joined);
  }
  return 0;
}
