// The fixed cost of one parallel region: what every multi-threaded kernel
// call pays before doing any work. A batch-1 conv net runs one region per
// conv and pool (~40 for SqueezeNet), so at a few microseconds each this is
// a visible share of a 2 ms inference. The label names the OpenMP runtime
// (build option WEIR_OPENMP_RUNTIME: compare a build configured with
// -DWEIR_OPENMP_RUNTIME=GNU; docs/perf.md).
#include <benchmark/benchmark.h>

#include <atomic>

#include "ops/threading.h"

namespace {

// An empty region on `threads` threads (Args: threads).
void BM_EmptyParallelRegion(benchmark::State& state) {
  weir::set_intra_op_threads(static_cast<int>(state.range(0)));
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    weir::parallel_for(state.range(0), 1, [&](int64_t begin, int64_t) { sink.fetch_add(begin, std::memory_order_relaxed); });
  }
  benchmark::DoNotOptimize(sink.load());
  state.SetLabel(weir::openmp_runtime());
  weir::set_intra_op_threads(0);
}
BENCHMARK(BM_EmptyParallelRegion)->ArgName("threads")->Arg(2)->UseRealTime();

// Regions separated by ~7 us of single-threaded work, as between two small
// kernels of a model: the pool's threads must still be awake for the next one.
void BM_RegionsBetweenSerialWork(benchmark::State& state) {
  weir::set_intra_op_threads(2);
  std::atomic<int64_t> sink{0};
  volatile double serial = 0;
  for (auto _ : state) {
    for (int i = 0; i < 2000; ++i) serial = serial + 1.0;
    weir::parallel_for(2, 1, [&](int64_t begin, int64_t) { sink.fetch_add(begin, std::memory_order_relaxed); });
  }
  benchmark::DoNotOptimize(sink.load());
  state.SetLabel(weir::openmp_runtime());
  weir::set_intra_op_threads(0);
}
BENCHMARK(BM_RegionsBetweenSerialWork)->UseRealTime();

}  // namespace
