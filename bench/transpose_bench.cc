// Transpose between channels-first and channels-last (what the layout pass
// leaves at a conv net's input and output), through the kernel API, in GB/s
// of memory traffic (read + written).
#include <benchmark/benchmark.h>

#include "core/graph.h"
#include "ops/register_ops.h"
#include "ops/threading.h"

namespace {

// Args: channels, height (= width), to_last (NCHW -> NHWC when 1, back when 0), threads.
void BM_TransposeChannelsF32(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1);
  const bool to_last = state.range(2) != 0;
  weir::set_intra_op_threads(static_cast<int>(state.range(3)));
  std::vector<int64_t> in_sizes = to_last ? std::vector<int64_t>{1, c, h, h} : std::vector<int64_t>{1, h, h, c};
  std::vector<int64_t> perm = to_last ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 3, 1, 2};
  weir::Graph g("bench");
  weir::Value* x = g.add_input("x", {weir::DType::kFloat32, weir::Shape::from_sizes(in_sizes)});
  weir::Node* node = g.add_node("Transpose", {x}, 1, {{"perm", weir::Attribute(perm)}});
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  weir::Tensor tx(weir::DType::kFloat32, in_sizes);
  for (auto _ : state) {
    weir::KernelContext ctx(*node, {tx}, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * c * h * h * 4);
  weir::set_intra_op_threads(0);
}
BENCHMARK(BM_TransposeChannelsF32)
    ->ArgNames({"c", "hw", "to_last", "threads"})
    ->Args({3, 224, 1, 1})->Args({3, 224, 1, 2})      // an ImageNet image into the first conv
    ->Args({64, 56, 1, 2})->Args({64, 56, 0, 2})      // a feature map either way
    ->Args({1000, 1, 0, 2})                           // logits after a global pool
    ->UseRealTime();

}  // namespace
