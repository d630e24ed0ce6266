// A Session on cuda:0: a small MLP (MatMul, Add, Relu, MatMul, Softmax) with
// a constant and a parameter, fed host tensors and returning host tensors,
// matches the same plan on the CPU within 1e-5 relative, runs again without
// new cudaMalloc calls, keeps its parameter on the device and hands its
// outputs back in pinned host memory. A node without a CUDA kernel runs on
// the host with host_fallback, and matches the CPU. Without a GPU
// (or without CUDA in the build) asking for cuda:0 is refused naming why.
#include <cmath>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "core/cuda/cuda_device.h"
#include "core/error.h"
#include "core/graph.h"
#include "runtime/device_support.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/backend_comparison.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

Tensor uniform(const std::vector<int64_t>& sizes, uint32_t seed, double scale) {
  return testing::make_tensor(DType::kFloat32,
                              testing::random_values(DType::kFloat32, testing::count_of(sizes), seed, -scale, scale), sizes);
}

// x[batch, 64] -> MatMul w1 (constant) -> Add b1 -> Relu -> MatMul w2 (parameter) -> Softmax.
std::unique_ptr<Graph> mlp(int64_t in, int64_t hidden, int64_t classes) {
  auto g = std::make_unique<Graph>("mlp");
  Value* x = g->add_input("x", {DType::kFloat32, Shape{Dim::symbol("batch"), Dim(in)}});
  Value* w1 = g->add_constant("w1", uniform({in, hidden}, 1, 1.0 / std::sqrt(static_cast<double>(in))));
  Value* b1 = g->add_constant("b1", uniform({hidden}, 2, 0.1));
  Value* w2 = g->add_persistent("w2", {DType::kFloat32, Shape{hidden, classes}}, PersistentRole::kParameter,
                                uniform({hidden, classes}, 3, 1.0 / std::sqrt(static_cast<double>(hidden))));
  Node* mm1 = g->add_node("MatMul", {x, w1}, 1, {}, "mm1");
  Node* add = g->add_node("Add", {mm1->output(0), b1}, 1, {}, "add1");
  Node* relu = g->add_node("Relu", {add->output(0)}, 1, {}, "relu1");
  Node* mm2 = g->add_node("MatMul", {relu->output(0), w2}, 1, {}, "mm2");
  Node* softmax = g->add_node("Softmax", {mm2->output(0)}, 1, {{"axis", Attribute(int64_t{-1})}}, "probabilities");
  g->add_output(softmax->output(0));
  g->add_output(relu->output(0));
  return g;
}

class CudaSession : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device available";
  }
};

TEST_F(CudaSession, MlpMatchesTheCpuAndRunsAgainFromCachedMemory) {
  std::unique_ptr<Graph> g = mlp(64, 96, 10);
  std::shared_ptr<const Plan> cpu_plan = compile(*g);
  CompileOptions on_gpu;
  on_gpu.default_device = Device::cuda(0);
  std::shared_ptr<const Plan> gpu_plan = compile(*g, on_gpu);
  Session cpu(cpu_plan);
  Session gpu(gpu_plan);
  ASSERT_EQ(gpu.devices(), std::vector<Device>{Device::cuda(0)});
  EXPECT_EQ(gpu.state("w2").device(), Device::cuda(0)) << "the parameter lives on the device";

  int64_t mallocs_after_first = -1;
  for (int64_t batch : {int64_t{32}, int64_t{32}, int64_t{7}}) {
    Tensor x = uniform({batch, 64}, static_cast<uint32_t>(10 + batch), 2.0);
    std::vector<Tensor> want = cpu.run({{"x", x}});
    std::vector<Tensor> got = gpu.run({{"x", x}});
    ASSERT_EQ(got.size(), 2u);
    // Probabilities within 1e-5 relative; the hidden activations (of order
    // 1, sums of 64 products in another order) within 1e-5 of their scale,
    // since those that cancel to near zero carry the sums' absolute error.
    const testing::Tolerance tolerances[] = {{1e-5, 1e-7}, {1e-5, 1e-5}};
    for (size_t o = 0; o < got.size(); ++o) {
      EXPECT_EQ(got[o].device(), Device::cpu());
      // In pinned host memory: the copy back ran by DMA, without the driver's staging.
      cudaPointerAttributes where{};
      ASSERT_EQ(cudaPointerGetAttributes(&where, got[o].raw_data()), cudaSuccess);
      EXPECT_EQ(where.type, cudaMemoryTypeHost) << "output " << o << " is not in pinned host memory";
      testing::expect_close(got[o], want[o], tolerances[o], "output " + std::to_string(o) + ", batch " + std::to_string(batch));
    }
    if (mallocs_after_first < 0) {
      mallocs_after_first = gpu.memory_stats(Device::cuda(0)).system_allocations;
    } else if (batch == 32) {
      EXPECT_EQ(gpu.memory_stats(Device::cuda(0)).system_allocations, mallocs_after_first)
          << "the second run of a batch reuses the first's blocks";
    }
  }
  DeviceMemoryStats stats = gpu.memory_stats(Device::cuda(0));
  EXPECT_GT(stats.stats.peak_bytes, 0);
  EXPECT_GT(stats.cache_hits, 0);

  // A new parameter value reaches the device and changes the result alike.
  Tensor w2 = uniform({96, 10}, 77, 0.3);
  cpu.set_state("w2", w2);
  gpu.set_state("w2", w2);
  Tensor x = uniform({5, 64}, 78, 2.0);
  testing::expect_close(gpu.run({{"x", x}})[0], cpu.run({{"x", x}})[0], {1e-5, 1e-7}, "after set_state");
}

TEST_F(CudaSession, AMisshapenFeedIsRefusedBeforeAnythingRuns) {
  std::unique_ptr<Graph> g = mlp(64, 8, 3);
  CompileOptions on_gpu;
  on_gpu.default_device = Device::cuda(0);
  Session gpu(compile(*g, on_gpu));
  try {
    gpu.run({{"x", uniform({4, 63}, 1, 1.0)}});  // the feed's shape is checked first
    FAIL() << "a misshapen feed ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("feed 'x'"), std::string::npos) << e.what();
  }
}

// CumSum has no CUDA kernel: with host_fallback it runs on the host between
// a copy back (into pinned memory, on the GPU's stream) and a copy onto the
// GPU, and the input x, read on both, is copied back for the host. The
// results match the CPU's run after run; a host output comes back as it is.
TEST_F(CudaSession, ANodeWithoutACudaKernelRunsOnTheHostAndMatchesTheCpu) {
  Graph g("fallback");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{Dim::symbol("batch"), Dim(64)}});
  Value* axis = g.add_constant("axis", testing::make_tensor(DType::kInt64, {1.0}, {}));
  Value* relu = g.add_node("Relu", {x}, 1, {}, "relu")->output(0);
  Value* sums = g.add_node("CumSum", {relu, axis}, 1, {}, "running_sums")->output(0);
  Value* x_sums = g.add_node("CumSum", {x, axis}, 1, {}, "x_sums")->output(0);
  Value* product = g.add_node("Mul", {sums, x_sums}, 1, {}, "product")->output(0);
  g.add_output(g.add_node("Mul", {product, x}, 1, {}, "scaled")->output(0));
  g.add_output(sums);
  CompileOptions on_gpu;
  on_gpu.default_device = Device::cuda(0);
  on_gpu.host_fallback = true;
  std::shared_ptr<const Plan> gpu_plan = compile(g, on_gpu);
  ASSERT_EQ(gpu_plan->devices(), (std::vector<Device>{Device::cuda(0), Device::cpu(0)})) << gpu_plan->to_string();
  Session cpu(compile(g));
  Session gpu(gpu_plan);
  for (int64_t batch : {int64_t{16}, int64_t{16}, int64_t{3}}) {
    Tensor x_value = uniform({batch, 64}, static_cast<uint32_t>(20 + batch), 1.0);
    std::vector<Tensor> want = cpu.run({{"x", x_value}});
    std::vector<Tensor> got = gpu.run({{"x", x_value}});
    ASSERT_EQ(got.size(), 2u);
    testing::expect_close(got[0], want[0], {1e-5, 1e-6}, "scaled, batch " + std::to_string(batch));
    EXPECT_TRUE(got[1].bitwise_equal(want[1])) << "the host's CumSum, batch " << batch;
  }
  CompileOptions refusing = on_gpu;
  refusing.host_fallback = false;
  try {
    compile(g, refusing);
    FAIL() << "a node without a CUDA kernel compiled for cuda:0";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA kernel for CumSum"), std::string::npos) << e.what();
  }
}

// Needs no GPU: where there is none, asking for one says why.
TEST(CudaWithoutAGpu, ASessionOnCudaIsRefusedNamingTheReason) {
  if (built_with_cuda() && cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  std::unique_ptr<Graph> g = mlp(4, 4, 2);
  CompileOptions on_gpu;
  on_gpu.default_device = Device::cuda(0);
  std::shared_ptr<const Plan> plan = compile(*g, on_gpu);  // kernels are made without touching a device
  try {
    Session session(plan);
    FAIL() << "a session on cuda:0 started without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDevice);
    EXPECT_NE(std::string(e.what()).find("cuda:0: no CUDA device (cudaGetDeviceCount returned "), std::string::npos)
        << e.what();
  }
  EXPECT_NE(testing::device_unusable_reason(Device::cuda(1)).find("cuda:1: no CUDA device"), std::string::npos);
  EXPECT_EQ(testing::device_unusable_reason(Device::cpu(3)), "");
}

}  // namespace
}  // namespace weir
