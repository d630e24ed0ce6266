// Core throughput: f16/bf16 conversion, topological sort of large graphs,
// and model save/load with external data. Figures go in docs/perf.md.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "core/model_io.h"

namespace {

std::vector<float> random_floats(size_t count) {
  std::mt19937 engine(42);
  std::normal_distribution<float> normal(0.0f, 10.0f);
  std::vector<float> values(count);
  for (float& value : values) value = normal(engine);
  return values;
}

// Converts a 1 Mi-element buffer with `convert`, one element at a time.
template <typename In, typename Out, Out (*convert)(In)>
void BM_Convert(benchmark::State& state) {
  std::vector<In> in(static_cast<size_t>(state.range(0)));
  if constexpr (std::is_same_v<In, float>) {
    in = random_floats(in.size());
  } else {
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<In>(i * 2654435761u >> 16);
  }
  std::vector<Out> out(in.size());
  for (auto _ : state) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = convert(in[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Convert<float, uint16_t, weir::float_to_f16_bits>)->Name("BM_FloatToF16")->Arg(1 << 20);
BENCHMARK(BM_Convert<uint16_t, float, weir::f16_bits_to_float>)->Name("BM_F16ToFloat")->Arg(1 << 20);
BENCHMARK(BM_Convert<float, uint16_t, weir::float_to_bf16_bits>)->Name("BM_FloatToBF16")->Arg(1 << 20);

// A residual-style graph: a chain where every node also reads the node two back.
std::unique_ptr<weir::Graph> make_chain(int64_t nodes) {
  auto g = std::make_unique<weir::Graph>("chain");
  weir::Value* x = g->add_input("x", {weir::DType::kFloat32, weir::Shape{8}});
  weir::Value* previous = x;
  weir::Value* before = x;
  for (int64_t i = 0; i < nodes; ++i) {
    weir::Value* out = g->add_node("Add", {previous, before})->output(0);
    before = previous;
    previous = out;
  }
  g->add_output(previous);
  return g;
}

void BM_TopologicalOrder(benchmark::State& state) {
  auto g = make_chain(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(g->topological_order());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_TopologicalOrder)->Arg(1000)->Arg(100000);

void BM_GraphClone(benchmark::State& state) {
  auto g = make_chain(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(g->clone());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_GraphClone)->Arg(100000);

// 16 parameters of 4 MiB each: 64 MiB of external data.
weir::Model make_weights_model() {
  weir::Model model;
  model.graph = std::make_unique<weir::Graph>("weights");
  weir::Value* x = model.graph->add_input("x", {weir::DType::kFloat32, weir::Shape{1024}});
  std::vector<float> values = random_floats(1 << 20);
  for (int i = 0; i < 16; ++i) {
    weir::Value* w = model.graph->add_persistent("w" + std::to_string(i), {weir::DType::kFloat32, weir::Shape{1024, 1024}},
                                                 weir::PersistentRole::kParameter,
                                                 weir::Tensor::from_vector(values, {1024, 1024}));
    x = model.graph->add_node("MatMul", {x, w})->output(0);
  }
  model.graph->add_output(x);
  return model;
}

std::filesystem::path bench_dir() {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "weir-core-bench";
  std::filesystem::create_directories(dir);
  return dir;
}

void BM_SaveModel64MiB(benchmark::State& state) {
  weir::Model model = make_weights_model();
  std::filesystem::path path = bench_dir() / "weights.weir";
  for (auto _ : state) weir::save_model(model, path);
  state.SetBytesProcessed(state.iterations() * (int64_t{64} << 20));
}
BENCHMARK(BM_SaveModel64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoadModel64MiB(benchmark::State& state) {
  std::filesystem::path path = bench_dir() / "weights.weir";
  weir::save_model(make_weights_model(), path);
  for (auto _ : state) benchmark::DoNotOptimize(weir::load_model(path));
  state.SetBytesProcessed(state.iterations() * (int64_t{64} << 20));
}
BENCHMARK(BM_LoadModel64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
