// Loading a model to a runnable plan: the protobuf model (.weir, weights
// inline or in an external data file) parsed and compiled, against the
// compiled plan file mapped with its weights used in place.
//
//   build/release/bench/weir_plan_load_bench
//
// The model: a conv net of `blocks` residual pairs of 3x3 convs with 128
// channels (about 0.6 MB of weights per conv). Figures go in docs/perf.md.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "bench/bench_tensors.h"
#include "core/model_io.h"
#include "runtime/plan_file.h"

namespace weir {
namespace {

constexpr int64_t kChannels = 128;

std::unique_ptr<Graph> conv_net(int blocks) {
  auto g = std::make_unique<Graph>("conv_net");
  Value* h = g->add_input("x", {DType::kFloat32, Shape{1, kChannels, 14, 14}});
  int n = 0;
  auto conv = [&](Value* in) {
    std::string name = "conv" + std::to_string(n++);
    Value* w = g->add_constant(name + "_w", bench::random_tensor(DType::kFloat32, {kChannels, kChannels, 3, 3}));
    Value* b = g->add_constant(name + "_b", bench::random_tensor(DType::kFloat32, {kChannels}));
    return g->add_node("Conv", {in, w, b}, 1, {{"pads", Attribute(std::vector<int64_t>{1, 1, 1, 1})}}, name)->output(0);
  };
  for (int i = 0; i < blocks; ++i) {
    Value* y = g->add_node("Relu", {conv(h)})->output(0);
    y = g->add_node("Add", {conv(y), h})->output(0);
    h = g->add_node("Relu", {y})->output(0);
  }
  g->add_output(h);
  return g;
}

struct Files {
  std::filesystem::path dir;
  Files(int blocks) : dir(std::filesystem::temp_directory_path() / ("weir_plan_load_bench_" + std::to_string(blocks))) {
    std::filesystem::create_directories(dir);
    Model model;
    model.graph = conv_net(blocks);
    save_model(model, dir / "inline.weir", {.external_data_threshold = SIZE_MAX});
    save_model(model, dir / "external.weir", {.external_data_threshold = 1024});
    save_plan(*compile(*model.graph), dir / "model.weirplan");
  }
  ~Files() { std::filesystem::remove_all(dir); }
};

Files& files(int blocks) {
  static std::map<int, std::unique_ptr<Files>> cache;
  auto& entry = cache[blocks];
  if (!entry) entry = std::make_unique<Files>(blocks);
  return *entry;
}

void set_counters(benchmark::State& state, int blocks) {
  state.counters["weight_MB"] = static_cast<double>(2 * blocks) * kChannels * kChannels * 9 * 4 / 1e6;
}

void BM_LoadProtobufAndCompile(benchmark::State& state, const char* file) {
  int blocks = static_cast<int>(state.range(0));
  std::filesystem::path path = files(blocks).dir / file;
  for (auto _ : state) {
    Model model = load_model(path);
    benchmark::DoNotOptimize(compile(*model.graph));
  }
  set_counters(state, blocks);
}

void BM_LoadPlanFile(benchmark::State& state) {
  int blocks = static_cast<int>(state.range(0));
  std::filesystem::path path = files(blocks).dir / "model.weirplan";
  for (auto _ : state) benchmark::DoNotOptimize(load_plan(path));
  set_counters(state, blocks);
}

BENCHMARK_CAPTURE(BM_LoadProtobufAndCompile, inline_weights, "inline.weir")->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadProtobufAndCompile, external_weights, "external.weir")
    ->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadPlanFile)->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace weir
