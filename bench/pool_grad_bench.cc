// LeNet's 2x2 max pools at training batch 64, forward and backward, f32 and
// bf16, through Weir's kernel API (each run allocates its output, as a run
// without a memory plan would). state.range: channels, input side.
#include <benchmark/benchmark.h>

#include "bench/bench_tensors.h"
#include "core/graph.h"
#include "ops/register_ops.h"

namespace {

// kOp 0: MaxPool, 1: MaxPoolGrad.
template <weir::DType kDType, int kOp>
void BM_Pool(benchmark::State& state) {
  const int64_t n = 64, c = state.range(0), hw = state.range(1);
  std::vector<int64_t> xs = {n, c, hw, hw}, ys = {n, c, hw / 2, hw / 2};
  weir::Graph g("bench");
  weir::Value* x = g.add_input("x", {kDType, weir::Shape::from_sizes(xs)});
  weir::Value* dy = g.add_input("dy", {kDType, weir::Shape::from_sizes(ys)});
  std::map<std::string, weir::Attribute> attrs = {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
  weir::Node* node = kOp == 0 ? g.add_node("MaxPool", {x}, 1, attrs) : g.add_node("MaxPoolGrad", {dy, x}, 1, attrs);
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  std::vector<weir::Tensor> feeds =
      kOp == 0 ? std::vector<weir::Tensor>{weir::bench::random_tensor(kDType, xs)}
               : std::vector<weir::Tensor>{weir::bench::random_tensor(kDType, ys), weir::bench::random_tensor(kDType, xs)};
  for (auto _ : state) {
    weir::KernelContext ctx(*node, feeds, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
}
#define WEIR_POOL_BENCH(dtype, op, label) \
  BENCHMARK(BM_Pool<weir::DType::dtype, op>)->Name(label)->Args({32, 28})->Args({64, 14})->Unit(benchmark::kMicrosecond)->UseRealTime()
WEIR_POOL_BENCH(kFloat32, 0, "MaxPool/f32");
WEIR_POOL_BENCH(kBFloat16, 0, "MaxPool/bf16");
WEIR_POOL_BENCH(kFloat32, 1, "MaxPoolGrad/f32");
WEIR_POOL_BENCH(kBFloat16, 1, "MaxPoolGrad/bf16");
#undef WEIR_POOL_BENCH

}  // namespace
