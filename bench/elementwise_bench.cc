// Elementwise kernels through the kernel API at 1 and 2 intra-op threads,
// in GB/s of memory traffic (inputs read + output written).
#include <benchmark/benchmark.h>

#include "core/graph.h"
#include "core/type_inference.h"
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

// y = Relu((x + z) * 0.5) - z on [1024, 1024] f32, 2 threads: four kernels
// one after another (fused = 0), or one FusedElementwise (fused = 1).
void BM_ChainF32(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  const int64_t n = 1024;
  weir::set_intra_op_threads(2);
  weir::Graph g("chain");
  weir::Value* x = g.add_input("x", {weir::DType::kFloat32, weir::Shape{n, n}});
  weir::Value* z = g.add_input("z", {weir::DType::kFloat32, weir::Shape{n, n}});
  weir::Value* half = g.add_input("half", {weir::DType::kFloat32, weir::Shape{}});
  std::vector<weir::Node*> nodes;
  if (fused) {
    nodes.push_back(g.add_node("FusedElementwise", {x, z, half}, 1,
                               {{"program", weir::Attribute(std::vector<std::string>{"Add 0 1", "Mul 3 2", "Relu 4", "Sub 5 1"})}}));
  } else {
    weir::Value* sum = g.add_node("Add", {x, z})->output(0);
    nodes.push_back(sum->producer());
    weir::Value* scaled = g.add_node("Mul", {sum, half})->output(0);
    nodes.push_back(scaled->producer());
    weir::Value* relu = g.add_node("Relu", {scaled})->output(0);
    nodes.push_back(relu->producer());
    nodes.push_back(g.add_node("Sub", {relu, z}));
  }
  weir::infer_graph_types(g, weir::default_op_registry());
  std::vector<std::unique_ptr<weir::OpKernel>> kernels;
  for (weir::Node* node : nodes) kernels.push_back(weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu));
  weir::Tensor tx(weir::DType::kFloat32, {n, n}), tz(weir::DType::kFloat32, {n, n});
  weir::Tensor th = weir::Tensor::scalar(0.5f);
  for (auto _ : state) {
    if (fused) {
      weir::KernelContext ctx(*nodes[0], {tx, tz, th}, weir::cpu_allocator());
      kernels[0]->compute(ctx);
      benchmark::DoNotOptimize(ctx.output(0).raw_data());
    } else {
      weir::KernelContext add(*nodes[0], {tx, tz}, weir::cpu_allocator());
      kernels[0]->compute(add);
      weir::KernelContext mul(*nodes[1], {add.output(0), th}, weir::cpu_allocator());
      kernels[1]->compute(mul);
      weir::KernelContext relu(*nodes[2], {mul.output(0)}, weir::cpu_allocator());
      kernels[2]->compute(relu);
      weir::KernelContext sub(*nodes[3], {relu.output(0), tz}, weir::cpu_allocator());
      kernels[3]->compute(sub);
      benchmark::DoNotOptimize(sub.output(0).raw_data());
    }
  }
  weir::set_intra_op_threads(0);
}
BENCHMARK(BM_ChainF32)->ArgNames({"fused"})->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
