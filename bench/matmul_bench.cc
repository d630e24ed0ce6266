// MatMul through Weir's kernel API (created once, run many times, as a plan
// runs it), reported in GFLOP/s. The oneDNN figures in shared/DEPENDENCIES.md
// are the reference: f32 2048^3 at 372-379 GFLOP/s, bf16 at 734-759, on this
// machine's 2 cores.
#include <benchmark/benchmark.h>

#include "bench/bench_tensors.h"
#include "core/graph.h"
#include "ops/register_ops.h"

namespace {

using weir::bench::random_tensor;

// state.range: m, k, n; the dtype comes from the template argument.
template <weir::DType kDType>
void BM_MatMul(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  weir::Graph g("bench");
  weir::Value* a = g.add_input("a", {kDType, weir::Shape{m, k}});
  weir::Value* b = g.add_input("b", {kDType, weir::Shape{k, n}});
  weir::Node* node = g.add_node("MatMul", {a, b});
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  weir::Tensor ta = random_tensor(kDType, {m, k}), tb = random_tensor(kDType, {k, n});
  for (auto _ : state) {
    weir::KernelContext ctx(*node, {ta, tb}, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(2 * m * k * n) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MatMul<weir::DType::kFloat32>)->Name("MatMul/f32")->Args({2048, 2048, 2048})->Args({64, 1024, 1024})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MatMul<weir::DType::kBFloat16>)->Name("MatMul/bf16")->Args({2048, 2048, 2048})->Args({64, 1024, 1024})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
