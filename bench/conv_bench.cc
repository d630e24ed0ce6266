// Conv through Weir's kernel API (created once, run many times, as a plan
// runs it), in GFLOP/s, forward and both backward directions. Inputs and
// outputs are plain NCHW, so each run includes oneDNN's reorders to and from
// its blocked layout; the layout pass (later) keeps activations blocked.
// Reference from shared/DEPENDENCIES.md: oneDNN's own 3x3 conv f32 N1 C64
// 56x56 K64 at ~420 GFLOP/s, bf16 ~880, on this machine's 2 cores.
#include <benchmark/benchmark.h>

#include "bench/bench_tensors.h"
#include "core/graph.h"
#include "ops/register_ops.h"

namespace {

using weir::bench::random_tensor;

// state.range: batch, input channels, output channels, spatial size, kernel
// size (pad k/2, stride 1). Op 0 = Conv, 1 = ConvGradData, 2 = ConvGradWeight.
template <weir::DType kDType, int kOp>
void BM_Conv(benchmark::State& state) {
  const int64_t n = state.range(0), c = state.range(1), co = state.range(2), hw = state.range(3), k = state.range(4);
  std::vector<int64_t> xs = {n, c, hw, hw}, ws = {co, c, k, k}, ys = {n, co, hw, hw};
  weir::Graph g("bench");
  weir::Value* x = g.add_input("x", {kDType, weir::Shape::from_sizes(xs)});
  weir::Value* w = g.add_input("w", {kDType, weir::Shape::from_sizes(ws)});
  weir::Value* dy = g.add_input("dy", {kDType, weir::Shape::from_sizes(ys)});
  std::map<std::string, weir::Attribute> attrs = {{"pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2}}};
  static const char* kOps[] = {"Conv", "ConvGradData", "ConvGradWeight"};
  std::vector<weir::Value*> inputs = kOp == 0 ? std::vector<weir::Value*>{x, w}
                                     : kOp == 1 ? std::vector<weir::Value*>{dy, w, x}
                                                : std::vector<weir::Value*>{dy, x, w};
  weir::Node* node = g.add_node(kOps[kOp], inputs, 1, attrs);
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  weir::Tensor tx = random_tensor(kDType, xs), tw = random_tensor(kDType, ws), tdy = random_tensor(kDType, ys);
  std::vector<weir::Tensor> feeds = kOp == 0 ? std::vector<weir::Tensor>{tx, tw}
                                    : kOp == 1 ? std::vector<weir::Tensor>{tdy, tw, tx}
                                               : std::vector<weir::Tensor>{tdy, tx, tw};
  for (auto _ : state) {
    weir::KernelContext ctx(*node, feeds, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
  double flops = 2.0 * static_cast<double>(n * co * hw * hw * c * k * k);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// ResNet-like shapes, then LeNet's two convs at training batch 64.
#define WEIR_CONV_BENCH(dtype, op, label)                                                       \
  BENCHMARK(BM_Conv<weir::DType::dtype, op>)->Name(label)->Args({1, 64, 64, 56, 3})->Args({1, 256, 256, 14, 3}) \
      ->Args({32, 64, 64, 28, 3})->Args({64, 1, 32, 28, 5})->Args({64, 32, 64, 14, 5})                   \
      ->Unit(benchmark::kMillisecond)->UseRealTime()
WEIR_CONV_BENCH(kFloat32, 0, "Conv/f32");
WEIR_CONV_BENCH(kBFloat16, 0, "Conv/bf16");
WEIR_CONV_BENCH(kFloat32, 1, "ConvGradData/f32");
WEIR_CONV_BENCH(kBFloat16, 1, "ConvGradData/bf16");
WEIR_CONV_BENCH(kFloat32, 2, "ConvGradWeight/f32");
WEIR_CONV_BENCH(kBFloat16, 2, "ConvGradWeight/bf16");
#undef WEIR_CONV_BENCH

// FusedConv as the inference pipeline leaves it: channels-last, constant
// weights (packed once), bias and Relu fused; f32. Args: input channels,
// output channels, spatial size, kernel size (pad k/2). SqueezeNet's 1x1
// squeeze and expand shapes and a 3x3 expand; the 1x1x1 case is the fixed
// cost of one call.
void BM_FusedConvNhwc(benchmark::State& state) {
  const int64_t c = state.range(0), co = state.range(1), hw = state.range(2), k = state.range(3);
  std::vector<int64_t> xs = {1, hw, hw, c}, ws = {co, c, k, k}, bs = {co};
  weir::Graph g("bench");
  weir::Value* x = g.add_input("x", {weir::DType::kFloat32, weir::Shape::from_sizes(xs)});
  weir::Value* w = g.add_constant("w", random_tensor(weir::DType::kFloat32, ws));
  weir::Value* b = g.add_constant("b", random_tensor(weir::DType::kFloat32, bs));
  std::map<std::string, weir::Attribute> attrs = {{"pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2}},
                                                  {"layout", weir::Attribute("NHWC")},
                                                  {"activation", weir::Attribute("Relu")}};
  weir::Node* node = g.add_node("FusedConv", {x, w, b}, 1, attrs);
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  std::vector<weir::Tensor> feeds = {random_tensor(weir::DType::kFloat32, xs), w->data(), b->data()};
  for (auto _ : state) {
    weir::KernelContext ctx(*node, feeds, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
  double flops = 2.0 * static_cast<double>(co * hw * hw * c * k * k);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_FusedConvNhwc)
    ->ArgNames({"c", "k", "hw", "kernel"})
    ->Args({16, 16, 1, 1})->Args({64, 16, 55, 1})->Args({16, 64, 55, 1})->Args({16, 64, 55, 3})->Args({256, 48, 13, 1})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
