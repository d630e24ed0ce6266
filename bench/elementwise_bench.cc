// Elementwise kernels through the kernel API at 1 and 2 intra-op threads,
// in GB/s of memory traffic (inputs read + output written).
#include <benchmark/benchmark.h>

#include "core/graph.h"
#include "ops/register_ops.h"
#include "ops/threading.h"

namespace {

// Args: rows, columns of A; B is [columns] (a bias) when broadcast is 1, else A's shape; threads.
void BM_AddF32(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const bool broadcast = state.range(2) != 0;
  weir::set_intra_op_threads(static_cast<int>(state.range(3)));
  std::vector<int64_t> b_sizes = broadcast ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
  weir::Graph g("bench");
  weir::Value* a = g.add_input("a", {weir::DType::kFloat32, weir::Shape{rows, cols}});
  weir::Value* b = g.add_input("b", {weir::DType::kFloat32, weir::Shape::from_sizes(b_sizes)});
  weir::Node* node = g.add_node("Add", {a, b});
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  weir::Tensor ta(weir::DType::kFloat32, {rows, cols}), tb(weir::DType::kFloat32, b_sizes);
  for (auto _ : state) {
    weir::KernelContext ctx(*node, {ta, tb}, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
  int64_t bytes = (2 * rows * cols + (broadcast ? cols : rows * cols)) * 4;
  state.SetBytesProcessed(state.iterations() * bytes);
  weir::set_intra_op_threads(0);
}
BENCHMARK(BM_AddF32)
    ->ArgNames({"rows", "cols", "bias", "threads"})
    ->Args({1024, 1024, 0, 1})->Args({1024, 1024, 0, 2})
    ->Args({4096, 1024, 1, 1})->Args({4096, 1024, 1, 2})
    ->Args({64, 256, 1, 1})->Args({64, 256, 1, 2})
    ->UseRealTime();

}  // namespace
