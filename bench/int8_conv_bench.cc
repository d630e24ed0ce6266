// int8 convolutions and matmuls through Weir's kernels (created once, run
// many times, as a plan runs them), in GOP/s (2 ops per multiply-add),
// against f32 on the same shapes: f32 FusedConv (oneDNN, constant weights,
// bias and Relu), the int8 reference loops (FusedQLinearConv under
// ScopedQuantizedReference) and the int8 oneDNN path (FusedQLinearConv,
// constant s8 weights packed once, per-channel scales, u8 activations with a
// nonzero zero point, bias and Relu), each on NCHW and NHWC data. Batch 1,
// ResNet shapes. Then QLinearMatMul against f32 MatMul (constant B).
//
//   OMP_NUM_THREADS=2 build/ci/bench/weir_int8_conv_bench
#include <benchmark/benchmark.h>

#include <cstring>
#include <optional>

#include "bench/bench_tensors.h"
#include "core/graph.h"
#include "ops/quantization/quantization_common.h"
#include "ops/register_ops.h"

namespace {

using weir::bench::random_tensor;

// i8 or u8 values spread over the whole byte range.
weir::Tensor spread(weir::DType dtype, const std::vector<int64_t>& sizes) {
  weir::Tensor t = weir::Tensor::uninitialized(dtype, sizes);
  auto* data = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.num_elements(); ++i) data[i] = static_cast<uint8_t>((i * 37 + 11) % 251);
  return t;
}

weir::Tensor scalar_u8(int value) {
  weir::Tensor t = weir::Tensor::uninitialized(weir::DType::kUInt8, {});
  t.data<uint8_t>()[0] = static_cast<uint8_t>(value);
  return t;
}

void run_kernel(benchmark::State& state, weir::Node* node, const std::vector<weir::Tensor>& feeds,
                double ops) {
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  for (auto _ : state) {
    weir::KernelContext ctx(*node, feeds, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
  state.counters["GOP/s"] = benchmark::Counter(ops * static_cast<double>(state.iterations()),
                                               benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// Args: input channels, output channels, spatial size, kernel size (pad
// k/2), NHWC (0/1). kMode: 0 f32 FusedConv, 1 int8 reference loops, 2 int8 oneDNN.
template <int kMode>
void BM_Conv(benchmark::State& state) {
  const int64_t c = state.range(0), co = state.range(1), hw = state.range(2), k = state.range(3);
  const bool nhwc = state.range(4) != 0;
  std::vector<int64_t> xs = nhwc ? std::vector<int64_t>{1, hw, hw, c} : std::vector<int64_t>{1, c, hw, hw};
  std::vector<int64_t> ws = {co, c, k, k};
  std::map<std::string, weir::Attribute> attrs = {{"pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2}},
                                                  {"layout", weir::Attribute(nhwc ? "NHWC" : "NCHW")},
                                                  {"activation", weir::Attribute("Relu")}};
  weir::Graph g("bench");
  const double ops = 2.0 * static_cast<double>(co * hw * hw * c * k * k);
  if (kMode == 0) {
    weir::Value* x = g.add_input("x", {weir::DType::kFloat32, weir::Shape::from_sizes(xs)});
    weir::Value* w = g.add_constant("w", random_tensor(weir::DType::kFloat32, ws));
    weir::Value* b = g.add_constant("b", random_tensor(weir::DType::kFloat32, {co}));
    weir::Node* node = g.add_node("FusedConv", {x, w, b}, 1, attrs);
    run_kernel(state, node, {random_tensor(weir::DType::kFloat32, xs), w->data(), b->data()}, ops);
    return;
  }
  std::vector<float> w_scales(static_cast<size_t>(co));
  for (size_t m = 0; m < w_scales.size(); ++m) w_scales[m] = 0.002f + 0.0001f * static_cast<float>(m % 13);
  weir::Tensor w_zero = weir::Tensor::uninitialized(weir::DType::kInt8, {co});
  std::memset(w_zero.raw_data(), 0, w_zero.nbytes());
  weir::Tensor bias = weir::Tensor::uninitialized(weir::DType::kInt32, {co});
  for (int64_t m = 0; m < co; ++m) bias.data<int32_t>()[m] = static_cast<int32_t>(m * 97 % 2000 - 1000);
  std::vector<weir::Tensor> feeds = {spread(weir::DType::kUInt8, xs),
                                     weir::Tensor::scalar<float>(0.02f),
                                     scalar_u8(128),
                                     spread(weir::DType::kInt8, ws),
                                     weir::Tensor::from_vector<float>(w_scales, {co}),
                                     w_zero,
                                     weir::Tensor::scalar<float>(0.05f),
                                     scalar_u8(120),
                                     bias};
  std::vector<weir::Value*> inputs;
  for (size_t i = 0; i < feeds.size(); ++i) {
    inputs.push_back(i == 0 ? g.add_input("x", {feeds[i].dtype(), feeds[i].shape()})
                            : g.add_constant("c" + std::to_string(i), feeds[i]));
  }
  weir::Node* node = g.add_node("FusedQLinearConv", inputs, 1, attrs);
  std::optional<weir::ScopedQuantizedReference> reference;
  if (kMode == 1) reference.emplace();
  run_kernel(state, node, feeds, ops);
}

#define WEIR_INT8_CONV_BENCH(mode, label)                                                                       \
  BENCHMARK(BM_Conv<mode>)->Name(label)->ArgNames({"c", "k", "hw", "kernel", "nhwc"})                           \
      ->Args({64, 64, 56, 3, 0})->Args({256, 64, 56, 1, 0})->Args({128, 128, 28, 3, 0})->Args({512, 512, 7, 3, 0}) \
      ->Args({64, 64, 56, 3, 1})->Args({256, 64, 56, 1, 1})->Args({128, 128, 28, 3, 1})->Args({512, 512, 7, 3, 1}) \
      ->Unit(benchmark::kMicrosecond)->UseRealTime()
WEIR_INT8_CONV_BENCH(0, "FusedConv/f32");
WEIR_INT8_CONV_BENCH(1, "FusedQLinearConv/reference");
WEIR_INT8_CONV_BENCH(2, "FusedQLinearConv/onednn");
#undef WEIR_INT8_CONV_BENCH

// Args: rows, K, N. kMode: 0 f32 MatMul, 1 QLinearMatMul reference loops, 2 oneDNN. B constant.
template <int kMode>
void BM_Matmul(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  weir::Graph g("bench");
  const double ops = 2.0 * static_cast<double>(m * k * n);
  if (kMode == 0) {
    weir::Value* a = g.add_input("a", {weir::DType::kFloat32, weir::Shape{m, k}});
    weir::Value* b = g.add_constant("b", random_tensor(weir::DType::kFloat32, {k, n}));
    weir::Node* node = g.add_node("MatMul", {a, b}, 1, {});
    run_kernel(state, node, {random_tensor(weir::DType::kFloat32, {m, k}), b->data()}, ops);
    return;
  }
  weir::Tensor b_zero = weir::Tensor::uninitialized(weir::DType::kInt8, {});
  b_zero.data<int8_t>()[0] = 0;
  std::vector<weir::Tensor> feeds = {spread(weir::DType::kUInt8, {m, k}), weir::Tensor::scalar<float>(0.02f),
                                     scalar_u8(128), spread(weir::DType::kInt8, {k, n}),
                                     weir::Tensor::scalar<float>(0.003f), b_zero,
                                     weir::Tensor::scalar<float>(0.05f), scalar_u8(120)};
  std::vector<weir::Value*> inputs;
  for (size_t i = 0; i < feeds.size(); ++i) {
    inputs.push_back(i == 0 ? g.add_input("a", {feeds[i].dtype(), feeds[i].shape()})
                            : g.add_constant("c" + std::to_string(i), feeds[i]));
  }
  weir::Node* node = g.add_node("QLinearMatMul", inputs, 1, {});
  std::optional<weir::ScopedQuantizedReference> reference;
  if (kMode == 1) reference.emplace();
  run_kernel(state, node, feeds, ops);
}

#define WEIR_INT8_MATMUL_BENCH(mode, label)                                                      \
  BENCHMARK(BM_Matmul<mode>)->Name(label)->ArgNames({"m", "k", "n"})->Args({1, 512, 1000})       \
      ->Args({1, 2048, 1000})->Args({128, 768, 768})->Unit(benchmark::kMicrosecond)->UseRealTime()
WEIR_INT8_MATMUL_BENCH(0, "MatMul/f32");
WEIR_INT8_MATMUL_BENCH(1, "QLinearMatMul/reference");
WEIR_INT8_MATMUL_BENCH(2, "QLinearMatMul/onednn");
#undef WEIR_INT8_MATMUL_BENCH

}  // namespace
