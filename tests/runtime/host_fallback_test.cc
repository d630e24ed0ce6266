// Host fallback (runtime/host_fallback.h): a node the GPU has no kernel for
// runs on the host, between copies, on the fake GPU of
// tests/run_ahead_host_backend.h (host memory named cuda:N, steps that run
// ahead, device work done later on the streams' threads):
//   - the node moves to cpu:0, the copy back from the GPU runs on the GPU
//     into host memory and the copy onto it on the GPU, and the results equal
//     the CPU's run after run while the device work is slow;
//   - a graph input or constant read both on the GPU and on the host lives
//     on the GPU and the host reads a copy;
//   - without the option, or for a node that reads a parameter or has
//     state, compile() refuses the node by name, as before;
//   - the host is no rank: a rank's program in a world of two, with an
//     AllReduce on the GPU, runs with its host node.
// The fake GPU's memory says cuda:N, and the host-only op of these tests
// fails when it is handed such a tensor, so a host kernel that reads GPU
// memory fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/communicator.h"
#include "core/error.h"
#include "core/type_inference.h"
#include "ops/comm/device_copy.h"
#include "ops/dtype_sets.h"
#include "ops/register_ops.h"
#include "runtime/cpu_backend.h"
#include "runtime/host_fallback.h"
#include "runtime/in_process_world.h"
#include "runtime/plan_file.h"
#include "runtime/session.h"
#include "tests/run_ahead_host_backend.h"
#include "tests/runtime/runtime_test_util.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using testing::error_of;
using testing::random_tensor;
using testing::RunAheadHostBackend;
using testing::RunAheadStream;

// test.HostProbe(X) = 2X, on the host only: it refuses a tensor that is not
// in host memory, as reading GPU memory from the host would crash.
class HostProbeKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.device().type != DeviceType::kCpu) ctx.fail("was handed a tensor on " + x.device().to_string());
    Tensor& y = ctx.allocate_output(0, DType::kFloat32, x.sizes(), KernelContext::Fill::kUninitialized);
    for (int64_t i = 0; i < x.num_elements(); ++i) y.data<float>()[i] = 2 * x.data<float>()[i];
  }
};

// Neg and Add of f32 tensors of equal sizes on the fake GPU: the host part
// allocates the output and enqueues the arithmetic, which sleeps 20 ms first
// when the node's name starts with "slow_" (so that a reader that does not
// wait for it reads stale memory).
class DeferredKernel final : public OpKernel {
 public:
  explicit DeferredKernel(const Node& node) : slow_(node.name().starts_with("slow_")), add_(node.op_type() == "Add") {}

  void compute(KernelContext& ctx) override {
    auto* stream = static_cast<RunAheadStream*>(ctx.stream()->native_handle());
    const Tensor& x = ctx.input(0);
    if (x.device().type != DeviceType::kCuda) ctx.fail("the fake GPU was handed a tensor on " + x.device().to_string());
    Tensor& y = ctx.allocate_output(0, DType::kFloat32, x.sizes(), KernelContext::Fill::kUninitialized);
    const float* a = x.data<float>();
    const float* b = add_ ? ctx.input(1).data<float>() : nullptr;
    float* out = y.data<float>();
    const int64_t n = x.num_elements();
    const bool slow = slow_;
    stream->enqueue([a, b, out, n, slow] {
      if (slow) std::this_thread::sleep_for(20ms);
      for (int64_t i = 0; i < n; ++i) out[i] = b != nullptr ? a[i] + b[i] : -a[i];
    });
  }

 private:
  bool slow_;
  bool add_;
};

// AllReduce (sum) on the fake GPU, as NCCL's: the device work calls the
// group (the in-process group reduces host tensors: staged through them).
class DeferredAllReduceKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    auto* stream = static_cast<RunAheadStream*>(ctx.stream()->native_handle());
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, DType::kFloat32, x.sizes(), KernelContext::Fill::kUninitialized);
    Tensor in = Tensor::uninitialized(DType::kFloat32, x.sizes(), cpu_allocator());
    Tensor out = Tensor::uninitialized(DType::kFloat32, x.sizes(), cpu_allocator());
    Communicator* group = ctx.communicator();
    if (group == nullptr) ctx.fail("needs a communicator");
    const void* from = x.raw_data();
    void* to = y.raw_data();
    stream->enqueue([from, to, in, out, group, tag = ctx.node().name()]() mutable {
      std::memcpy(in.raw_data(), from, in.nbytes());
      group->all_reduce(in, out, ReduceOp::kSum, CommCall{.tag = tag});
      std::memcpy(to, out.raw_data(), out.nbytes());
    });
  }
};

OpRegistry& probe_ops() {
  static OpRegistry* ops = [] {
    auto* registry = new OpRegistry();
    register_all_ops(*registry);
    OpSchema probe("HostProbe", "test");
    probe.input("X", "T").output("Y", "T").type_constraint("T", {DType::kFloat32})
        .infer([](InferenceContext& ctx) {
          if (const TensorType* x = ctx.input_type(0)) ctx.set_output_type(0, *x);
        })
        .doc("2X, on the host only");
    registry->add(std::move(probe));
    return registry;
  }();
  return *ops;
}

// The CPU's kernels, HostProbe on the host, and the fake GPU's: Neg, Add,
// AllReduce, and DeviceCopy (every device's, through the backend).
struct FakeGpu {
  KernelRegistry kernels;
  int index;

  explicit FakeGpu(int gpu_index) : index(gpu_index) {
    register_cpu_kernels(kernels);
    kernels.add(KernelOp("test", "HostProbe"), DeviceType::kCpu, {DType::kFloat32},
                [](const Node&) { return std::make_unique<HostProbeKernel>(); });
    for (const char* op : {"Neg", "Add"}) {
      kernels.add(op, DeviceType::kCuda, {DType::kFloat32},
                  [](const Node& node) { return std::make_unique<DeferredKernel>(node); });
    }
    kernels.add("AllReduce", DeviceType::kCuda, {DType::kFloat32},
                [](const Node&) { return std::make_unique<DeferredAllReduceKernel>(); });
  }

  CompileOptions compile_options(bool fallback = true) const {
    CompileOptions options;
    options.default_device = Device::cuda(0);
    options.kernels = &kernels;
    options.ops = &probe_ops();
    options.host_fallback = fallback;
    return options;
  }

  static SessionOptions session_options() {
    SessionOptions options;
    options.device_memory = testing::fake_device_memory;
    options.make_backend = [](const Device& device, Allocator& allocator) -> std::unique_ptr<Backend> {
      if (device.type == DeviceType::kCpu) return make_cpu_backend(device, allocator, std::chrono::seconds(60));
      return std::make_unique<RunAheadHostBackend>(device, allocator);
    };
    return options;
  }
};

Node* node_named(const Plan& plan, const std::string& name) {
  for (Node* node : plan.graph().nodes()) {
    if (node->name() == name) return node;
  }
  return nullptr;
}

// The plan's DeviceCopy nodes as "device: input -> to_host".
std::vector<std::string> copies_of(const Plan& plan) {
  std::vector<std::string> copies;
  for (const Node* node : plan.graph().nodes()) {
    if (node->op_type() != "DeviceCopy") continue;
    copies.push_back(node->device()->to_string() + ": " + node->input(0)->name() + (copies_to_host(*node) ? " to host" : ""));
  }
  std::sort(copies.begin(), copies.end());
  return copies;
}

Value* op(Graph& g, const std::string& type, std::vector<Value*> inputs, const std::string& name,
          const std::string& domain = "") {
  Node* node = g.add_node(type, inputs, 1, {}, name);
  if (!domain.empty()) node->set_domain(domain);
  return node->output(0);
}

// x -> slow_neg (GPU) -> probe (host) -> slow_neg2 (GPU) -> add(., x) (GPU).
std::unique_ptr<Graph> round_trip_graph() {
  auto g = std::make_unique<Graph>("round_trip");
  Value* x = g->add_input("x", {DType::kFloat32, Shape{4096}});
  Value* v = op(*g, "Neg", {x}, "slow_neg");
  v = op(*g, "HostProbe", {v}, "probe", "test");
  v = op(*g, "Neg", {v}, "slow_neg2");
  g->add_output(op(*g, "Add", {v, x}, "add"));
  infer_graph_types(*g, probe_ops());
  return g;
}

// What the graph gives on the CPU alone: 2x + x... computed directly.
std::vector<float> expected_round_trip(const Tensor& x) {
  std::vector<float> out(static_cast<size_t>(x.num_elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = -(2 * -x.data<float>()[i]) + x.data<float>()[i];
  return out;
}

TEST(HostFallback, ANodeTheGpuHasNoKernelForRunsOnTheHostBetweenCopiesAndTheResultsAreTheCpus) {
  FakeGpu gpu(60);
  std::shared_ptr<const Plan> plan = compile(*round_trip_graph(), gpu.compile_options());
  ASSERT_EQ(plan->devices().size(), 2u);
  EXPECT_EQ(plan->devices()[0], Device::cuda(0));
  EXPECT_EQ(plan->devices()[1], Device::cpu(0));
  EXPECT_EQ(plan->rank_devices(), 1u);
  EXPECT_EQ(*node_named(*plan, "probe")->device(), Device::cpu(0));
  EXPECT_EQ(*node_named(*plan, "add")->device(), Device::cuda(0));
  // Back to the host on the GPU; onto the GPU on the GPU.
  EXPECT_EQ(copies_of(*plan), (std::vector<std::string>{"cuda:0: probe:0", "cuda:0: slow_neg:0 to host"}))
      << plan->to_string();

  Session session(plan, FakeGpu::session_options());
  for (int run = 0; run < 3; ++run) {
    Tensor x = random_tensor({4096}, 10 + run);
    std::vector<Tensor> got = session.run({{"x", x}});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].device().type, DeviceType::kCpu);
    const std::vector<float> want = expected_round_trip(x);
    EXPECT_EQ(std::memcmp(got[0].raw_data(), want.data(), want.size() * sizeof(float)), 0) << "run " << run;
  }
}

TEST(HostFallback, TheOptionOffRefusesTheNodeByName) {
  FakeGpu gpu(61);
  const std::string error = error_of([&] { compile(*round_trip_graph(), gpu.compile_options(/*fallback=*/false)); });
  EXPECT_NE(error.find("node 'probe': no CUDA kernel for test.HostProbe with f32 inputs"), std::string::npos) << error;
}

TEST(HostFallback, AnInputAndAConstantReadOnTheGpuAndOnTheHostLiveOnTheGpuAndTheHostReadsCopies) {
  Graph g("shared_reads");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{256}});
  Tensor c_data = random_tensor({256}, 7);
  Value* c = g.add_constant("c", c_data);
  Value* on_gpu = op(g, "Add", {x, c}, "slow_add");
  Value* x_on_host = op(g, "HostProbe", {x}, "probe_x", "test");
  Value* c_on_host = op(g, "HostProbe", {c}, "probe_c", "test");
  Value* back = op(g, "Add", {x_on_host, c_on_host}, "host_sum_on_gpu");
  g.add_output(op(g, "Add", {on_gpu, back}, "total"));
  infer_graph_types(g, probe_ops());

  FakeGpu gpu(62);
  std::shared_ptr<const Plan> plan = compile(g, gpu.compile_options());
  EXPECT_EQ(copies_of(*plan), (std::vector<std::string>{"cuda:0: c to host", "cuda:0: probe_c:0", "cuda:0: probe_x:0", "cuda:0: x to host"}))
      << plan->to_string();
  Session session(plan, FakeGpu::session_options());
  Tensor xs = random_tensor({256}, 8);
  std::vector<Tensor> got = session.run({{"x", xs}});
  for (int64_t i = 0; i < 256; ++i) {
    const float xv = xs.data<float>()[i], cv = c_data.data<float>()[i];
    EXPECT_EQ(got[0].data<float>()[i], (xv + cv) + (2 * xv + 2 * cv)) << i;
  }
}

TEST(HostFallback, ANodeThatReadsAParameterOrHasStateStaysAndIsRefusedByName) {
  FakeGpu gpu(63);
  Graph g("parameter");
  Value* w = g.add_persistent("w", {DType::kFloat32, Shape{8}}, PersistentRole::kParameter, random_tensor({8}, 1));
  g.add_output(op(g, "HostProbe", {w}, "probe_w", "test"));
  infer_graph_types(g, probe_ops());
  std::string error = error_of([&] { compile(g, gpu.compile_options()); });
  EXPECT_NE(error.find("node 'probe_w': no CUDA kernel for test.HostProbe"), std::string::npos) << error;

  // RandomNormalLike has state (the run's random stream) and no CUDA kernel.
  Graph r("random");
  Value* x = r.add_input("x", {DType::kFloat32, Shape{8}});
  r.add_output(op(r, "RandomNormalLike", {x}, "noise"));
  infer_graph_types(r, probe_ops());
  error = error_of([&] { compile(r, gpu.compile_options()); });
  EXPECT_NE(error.find("node 'noise': no CUDA kernel for RandomNormalLike"), std::string::npos) << error;
}

TEST(HostFallback, APlanFileKeepsTheHostAsNoRank) {
  FakeGpu gpu(64);
  std::shared_ptr<const Plan> plan = compile(*round_trip_graph(), gpu.compile_options());
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / "host_fallback.weirplan";
  save_plan(*plan, path);
  std::shared_ptr<const Plan> loaded = load_plan(path, {.ops = &probe_ops(), .kernels = &gpu.kernels});
  std::filesystem::remove(path);
  EXPECT_EQ(loaded->rank_devices(), 1u);
  EXPECT_EQ(copies_of(*loaded), copies_of(*plan));
  Session session(loaded, FakeGpu::session_options());
  Tensor x = random_tensor({4096}, 3);
  const std::vector<float> want = expected_round_trip(x);
  EXPECT_EQ(std::memcmp(session.run({{"x", x}})[0].raw_data(), want.data(), want.size() * sizeof(float)), 0);
}

TEST(HostFallback, TheHostIsNoRankOfAWorldWhoseGpusAllReduce) {
  FakeGpu gpu(65);
  Graph g("rank");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{64}});
  Value* probed = op(g, "HostProbe", {op(g, "Neg", {x}, "slow_neg")}, "probe", "test");
  Node* sum = g.add_node("AllReduce", {op(g, "Neg", {probed}, "neg_back")}, 1, {}, "sum");
  sum->set_attr("tag", Attribute(std::string("sum")));
  g.add_output(sum->output(0));
  infer_graph_types(g, probe_ops());
  std::shared_ptr<const Plan> plan = compile(g, gpu.compile_options());
  ASSERT_EQ(plan->rank_devices(), 1u);

  const std::vector<std::shared_ptr<World>> worlds =
      make_in_process_world(2, {.timeout = 30s, .devices = {Device::cuda(66), Device::cuda(67)}});
  std::vector<Tensor> feeds = {random_tensor({64}, 4), random_tensor({64}, 5)};
  std::vector<Tensor> got(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        SessionOptions options = FakeGpu::session_options();
        options.world = worlds[static_cast<size_t>(r)];
        Session session(plan, options);
        got[static_cast<size_t>(r)] = session.run({{"x", feeds[static_cast<size_t>(r)]}})[0];
      } catch (const Error& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    for (int64_t i = 0; i < 64; ++i) {
      // Each rank gives 2x (neg, 2·, neg); the sum is over both ranks.
      const float want = 2 * feeds[0].data<float>()[i] + 2 * feeds[1].data<float>()[i];
      EXPECT_EQ(got[static_cast<size_t>(r)].data<float>()[i], want) << "rank " << r << " element " << i;
    }
  }
}

}  // namespace
}  // namespace weir
