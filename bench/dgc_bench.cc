// Deep gradient compression's per-step compute on one rank, against the
// Momentum update a dense step runs instead (the baseline, in the same
// run): DgcEncode (momentum correction, local accumulation, the sampled
// threshold, the selection, the masking) at LeNet's fc1 size (1,605,632
// elements) and ResNet-18's largest layer (2,359,296), at the ramp's first
// and last sparsity; the threshold estimate alone; DgcMomentum's decode of
// 2 ranks' pairs. One thread (a rank's share of this machine's cores under
// launch). state.range: elements, sparsity in thousandths.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "core/graph.h"
#include "ops/optimizer/dgc.h"
#include "ops/register_ops.h"
#include "ops/threading.h"

namespace {

weir::Tensor gaussian(int64_t n, uint32_t seed, float scale) {
  weir::Tensor t(weir::DType::kFloat32, {n});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = normal(rng);
  return t;
}

void BM_Momentum(benchmark::State& state) {
  weir::set_intra_op_threads(1);
  const int64_t n = state.range(0);
  weir::Graph g("bench");
  std::vector<weir::Value*> in;
  for (const char* name : {"p", "g", "v"}) in.push_back(g.add_input(name, {weir::DType::kFloat32, weir::Shape{n}}));
  in.push_back(g.add_input("lr", {weir::DType::kFloat32, weir::Shape{}}));
  weir::Node* node = g.add_node("Momentum", in, 2, {{"momentum", weir::Attribute(0.9)}});
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  std::vector<weir::Tensor> feeds = {gaussian(n, 1, 1), gaussian(n, 2, 1e-3f), gaussian(n, 3, 1e-3f),
                                     weir::Tensor::scalar(0.01f)};
  for (auto _ : state) {
    weir::KernelContext ctx(*node, feeds, weir::cpu_allocator());
    kernel->compute(ctx);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_DgcEncode(benchmark::State& state) {
  weir::set_intra_op_threads(1);
  const int64_t n = state.range(0);
  const double sparsity = static_cast<double>(state.range(1)) / 1000;
  weir::Graph g("bench");
  std::vector<weir::Value*> in;
  for (const char* name : {"grad", "param", "u", "v"}) in.push_back(g.add_input(name, {weir::DType::kFloat32, weir::Shape{n}}));
  in.push_back(g.add_input("step", {weir::DType::kInt64, weir::Shape{}}));
  weir::Node* node = g.add_node("DgcEncode", in, 1, {{"sparsity", weir::Attribute(std::vector<double>{sparsity})}});
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  std::vector<weir::Tensor> feeds = {gaussian(n, 1, 1e-3f), gaussian(n, 2, 1), gaussian(n, 3, 1e-3f), gaussian(n, 4, 1e-2f),
                                     weir::Tensor::scalar<int64_t>(1)};
  for (auto _ : state) {
    weir::KernelContext ctx(*node, feeds, weir::cpu_allocator());
    kernel->compute(ctx);
    benchmark::DoNotOptimize(ctx.output(0).raw_data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_DgcThreshold(benchmark::State& state) {
  const int64_t n = state.range(0);
  const double sparsity = static_cast<double>(state.range(1)) / 1000;
  const weir::Tensor v = gaussian(n, 4, 1e-2f);
  const int64_t k = weir::dgc_k(n, 0, 0, 1, {sparsity});
  for (auto _ : state) benchmark::DoNotOptimize(weir::dgc_threshold(v.data<float>(), n, k));
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_DgcDecode(benchmark::State& state) {
  weir::set_intra_op_threads(1);
  const int64_t n = state.range(0);
  const int64_t k = weir::dgc_k(n, 0, 0, 1, {static_cast<double>(state.range(1)) / 1000});
  weir::Tensor encoded(weir::DType::kFloat32, {2 * k}), gathered(weir::DType::kFloat32, {4 * k});
  // 2 ranks' pairs as DgcEncode writes them: ascending indices, spread
  // over the parameter (each rank its own offset, so some coincide).
  std::mt19937 rng(5);
  for (int64_t r = 0; r < 2; ++r) {
    const int64_t stride = n / k;
    for (int64_t j = 0; j < k; ++j) {
      const auto index = static_cast<int32_t>(j * stride + static_cast<int64_t>(rng() % static_cast<uint32_t>(stride)));
      std::memcpy(gathered.data<float>() + 2 * (r * k + j), &index, sizeof index);
      gathered.data<float>()[2 * (r * k + j) + 1] = 1e-3f;
    }
  }
  weir::Graph g("bench");
  std::vector<weir::Value*> in;
  for (const char* name : {"param", "velocity", "dense"}) in.push_back(g.add_input(name, {weir::DType::kFloat32, weir::Shape{n}}));
  in.push_back(g.add_input("gathered", {weir::DType::kFloat32, weir::Shape{4 * k}}));
  in.push_back(g.add_input("encoded", {weir::DType::kFloat32, weir::Shape{2 * k}}));
  in.push_back(g.add_input("lr", {weir::DType::kFloat32, weir::Shape{}}));
  in.push_back(g.add_input("step", {weir::DType::kInt64, weir::Shape{}}));
  weir::Node* node = g.add_node("DgcMomentum", in, 2, {});
  auto kernel = weir::default_kernel_registry().create(*node, weir::DeviceType::kCpu);
  std::vector<weir::Tensor> feeds = {gaussian(n, 1, 1), gaussian(n, 2, 1e-3f), gaussian(n, 3, 1e-3f), gathered, encoded,
                                     weir::Tensor::scalar(0.01f), weir::Tensor::scalar<int64_t>(1)};
  for (auto _ : state) {
    weir::KernelContext ctx(*node, feeds, weir::cpu_allocator());
    kernel->compute(ctx);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

#define WEIR_DGC_SIZES ->Args({1605632, 750})->Args({1605632, 999})->Args({2359296, 999})->Unit(benchmark::kMicrosecond)->UseRealTime()
BENCHMARK(BM_Momentum)->Arg(1605632)->Arg(2359296)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DgcEncode) WEIR_DGC_SIZES;
BENCHMARK(BM_DgcThreshold) WEIR_DGC_SIZES;
BENCHMARK(BM_DgcDecode) WEIR_DGC_SIZES;
#undef WEIR_DGC_SIZES

}  // namespace
