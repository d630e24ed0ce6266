// Recompute on deep training graphs, with and without it: planned arena,
// measured run peak (the session's allocator, one session alive at a
// time), the whole step's estimated memory with parameters and data,
// ms/step (the median of the timed steps, the configurations taking turns
// step by step), the recomputed FLOPs against the forward pass's, and the
// largest parameter difference from the run without recompute after the
// timed steps (same data, same order).
//
// Two models:
//  - mlp: 784-256×layers-10, SGD, batch 4096 by default;
//  - bert: the zoo's BERT-style encoder (12 layers, hidden 256, 4 heads,
//    sequence 128, vocabulary 1000, dropout 0.1), SGD, batch 16 by default;
// each without recompute, with the segment choice (RecomputeOptions::
// segments_only: the lowest peak with checkpoints among block boundaries,
// everything between them recomputed; what `auto` did before budgets) and
// with `auto` at its default budget (a third of the peak without recompute).
//
//   OMP_NUM_THREADS=2 build/ci/bench/weir_recompute_bench [mlp|bert|both] [batch] [layers] [steps]
//   (the sizes go with mlp or bert; both runs each at its defaults)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "frontend/optim/optimizer.h"
#include "models/zoo.h"
#include "passes/memory/recompute.h"
#include "runtime/memory_estimate.h"
#include "runtime/plan.h"
#include "runtime/session.h"

namespace {

enum class Mode { kPlain, kSegments, kAuto };

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kPlain: return "without recompute";
    case Mode::kSegments: return "segments (old auto)";
    case Mode::kAuto: return "auto, default budget";
  }
  return "";
}

struct Run {
  Mode mode = Mode::kPlain;
  int64_t planned = 0, measured = 0, total = 0;
  int64_t recomputed_flops = 0, forward_flops = 0, budget = 0;
  size_t kept = 0;
  int cloned = 0, evaluations = 0;
  double choose_ms = 0;
  std::shared_ptr<const weir::Plan> plan;
  std::map<std::string, weir::Tensor> feeds;
  std::vector<std::string> parameters;
  std::unique_ptr<weir::Session> session;  // the timed one
  std::vector<double> step_ms;
};

struct Model {
  std::string name;  // "mlp" or "bert"
  int64_t batch = 0, layers = 0;
  int steps = 0;
};

// The step with `mode`'s recompute, compiled, and its feeds.
Run prepare(const Model& model, Mode mode) {
  weir::models::ZooOptions zoo;
  if (model.name == "mlp") {
    zoo.mlp_layers = model.layers;
    zoo.mlp_width = 256;
  } else {
    zoo.layers = model.layers;
    zoo.hidden = 256;
    zoo.heads = 4;
    zoo.seq = 128;
    zoo.vocab = 1000;
  }
  weir::models::ClassifierGraph g = weir::models::build_classifier(model.name, model.batch, /*training=*/true, zoo);
  Run r;
  r.mode = mode;
  weir::TrainingGraph step = weir::minimize(*g.graph, g.loss, {.kind = weir::OptimizerKind::kSgd});
  r.parameters = step.parameters;
  if (mode != Mode::kPlain) {
    // The pass on the finished step: what minimize()'s strategy runs, with
    // the segment choice reachable too.
    weir::RecomputeOptions options;
    options.loss = g.loss;
    options.automatic = true;
    options.segments_only = mode == Mode::kSegments;
    options.estimate_peak = [](weir::Graph& graph) { return weir::estimate_memory(graph).total(); };
    weir::Recompute pass(options);
    weir::PassContext context;
    auto start = std::chrono::steady_clock::now();
    pass.run(*g.graph, context);
    r.choose_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.recomputed_flops = pass.recomputed_flops();
    r.forward_flops = pass.forward_flops();
    r.budget = pass.budget();
    r.kept = pass.checkpoints().size();
    r.cloned = pass.recomputed_nodes();
    r.evaluations = pass.evaluations();
  }
  r.total = weir::estimate_memory(*g.graph->clone()).total();
  r.plan = weir::compile(*g.graph);
  r.planned = r.plan->memory().planned_bytes();
  std::mt19937_64 rng(7);
  std::map<std::string, weir::Tensor> feeds = {{"lr", weir::Tensor::scalar<float>(0.01f)}};
  if (model.name == "mlp") {
    weir::Tensor x(weir::DType::kFloat32, {model.batch, 1, 28, 28});
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(rng() % 256) / 255.0f;
    feeds[g.input] = x;
  } else {
    weir::Tensor ids(weir::DType::kInt64, {model.batch, zoo.seq});
    for (int64_t i = 0; i < ids.num_elements(); ++i) ids.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(zoo.vocab));
    feeds[g.input] = ids;
  }
  weir::Tensor y(weir::DType::kInt64, {model.batch});
  for (int64_t i = 0; i < model.batch; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  feeds[g.labels] = y;
  r.feeds = std::move(feeds);
  return r;
}

// One session at a time (the allocator's statistics are the process's):
// the peak of a step after a warm-up.
void measure_memory(Run& r) {
  weir::Session session(r.plan);
  session.run(r.feeds);  // warm-up: primitives, first touch
  session.reset_peak_memory();
  session.run(r.feeds);
  r.measured = session.memory_stats(weir::Device::cpu()).stats.peak_bytes;
}

// The configurations take turns step by step, so that a machine's load
// falls on all of them alike; each one's time is the median of its steps.
void time_steps(std::vector<Run>& runs, int steps) {
  for (Run& r : runs) {
    r.session = std::make_unique<weir::Session>(r.plan);
    r.session->run(r.feeds);  // warm-up
  }
  for (int i = 0; i < steps; ++i) {
    for (Run& r : runs) {
      auto start = std::chrono::steady_clock::now();
      r.session->run(r.feeds);
      r.step_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n == 0 ? 0 : n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double largest_difference(const Run& a, const Run& b) {
  double worst = 0;
  for (const std::string& name : a.parameters) {
    weir::Tensor x = a.session->state(name), y = b.session->state(name);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(x.data<float>()[i]) - y.data<float>()[i]));
    }
  }
  return worst;
}

void report(const Model& model, const std::vector<Mode>& modes) {
  if (model.name == "mlp") {
    std::printf("MLP 784-256x%lld-10, SGD, batch %lld, %d timed steps after one warm-up (the configurations in turn; "
                "medians)\n",
                static_cast<long long>(model.layers), static_cast<long long>(model.batch), model.steps);
  } else {
    std::printf("BERT-style encoder, %lld layers, hidden 256, 4 heads, seq 128, vocab 1000, dropout 0.1, SGD, batch %lld, "
                "%d timed steps after one warm-up (the configurations in turn; medians)\n",
                static_cast<long long>(model.layers), static_cast<long long>(model.batch), model.steps);
  }
  std::vector<Run> runs;
  for (Mode mode : modes) runs.push_back(prepare(model, mode));
  for (Run& r : runs) measure_memory(r);
  time_steps(runs, model.steps);
  auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  std::printf("%-22s %10s %13s %9s %9s %12s %8s %8s %9s\n", "", "arena MiB", "run peak MiB", "step MiB", "ms/step",
              "recomp GFLOP", "kept", "cloned", "choose ms");
  for (const Run& r : runs) {
    std::printf("%-22s %10.1f %13.1f %9.1f %9.1f %12.3f %8zu %8d %9.0f\n", mode_name(r.mode), mib(r.planned), mib(r.measured),
                mib(r.total), median(r.step_ms), static_cast<double>(r.recomputed_flops) * 1e-9, r.kept, r.cloned, r.choose_ms);
  }
  const Run& plain = runs.front();
  for (size_t i = 1; i < runs.size(); ++i) {
    const Run& r = runs[i];
    std::printf("%s / without: arena %.3f, run peak %.3f, step memory %.3f (1/%.2f), time %.3f; recomputed %.1f%% of the "
                "forward's %.3f GFLOP; budget %.1f MiB, %d peak estimates; largest parameter difference after %d steps: %g\n",
                mode_name(r.mode), static_cast<double>(r.planned) / plain.planned, static_cast<double>(r.measured) / plain.measured,
                static_cast<double>(r.total) / plain.total, static_cast<double>(plain.total) / r.total,
                median(r.step_ms) / median(plain.step_ms),
                r.forward_flops > 0 ? 100.0 * static_cast<double>(r.recomputed_flops) / static_cast<double>(r.forward_flops) : 0.0,
                static_cast<double>(r.forward_flops) * 1e-9, mib(r.budget), r.evaluations, model.steps + 1,
                largest_difference(plain, r));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "both";
  if (which != "mlp" && which != "bert" && which != "both") {
    std::fprintf(stderr, "usage: weir_recompute_bench [mlp|bert|both] [batch] [layers] [steps]\n");
    return 2;
  }
  // The sizes apply to one model; "both" runs each at its defaults.
  auto arg = [&](int i, int64_t fallback) { return argc > i && which != "both" ? std::atoll(argv[i]) : fallback; };
  if (which != "bert") {
    report({"mlp", arg(2, 4096), arg(3, 24), static_cast<int>(arg(4, 10))}, {Mode::kPlain, Mode::kSegments, Mode::kAuto});
  }
  if (which != "mlp") {
    report({"bert", arg(2, 16), arg(3, 12), static_cast<int>(arg(4, 5))}, {Mode::kPlain, Mode::kSegments, Mode::kAuto});
  }
  return 0;
}
