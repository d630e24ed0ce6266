// Steps that run ahead of the device (a GPU's): the session launches each
// step without waiting for its device work, so on the fake GPU of
// tests/run_ahead_host_backend.h, whose kernels here enqueue their
// arithmetic to run later on the stream's thread:
//   - the host has launched a chain before the device has done it, and the
//     results equal the CPU's; with wait_for_each_step it waits for each;
//   - a step on another stream reads its input only once the producer's
//     device work is done (the stream waits on the producer's event);
//   - memory another stream's device work still reads is not given to a
//     new output when the host frees it (record_use), while a stream's own
//     memory is reused at once, run after run;
//   - a device fault is reported at the run's end, saying how to find the
//     node; waiting for each step names it;
//   - scratch memory of a launch (cuda::LaunchScratch, which the CUDA
//     kernels' workspaces are) is not shared by two sessions of one plan
//     whose device work runs at once;
//   - a run whose group was aborted while its device work ran (NCCL's
//     watchdog ends an aborted collective without a device error) fails,
//     naming the reason, instead of reporting success.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/communicator.h"
#include "core/error.h"
#include "core/type_inference.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/register_ops.h"
#include "runtime/caching_allocator.h"
#include "runtime/in_process_world.h"
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

// What the fake device's kernels do beyond their op, by node name prefix:
// "slow_" device work sleeps before it reads its inputs; "after_free_" host
// part waits until the device's cache holds a freed block before it
// allocates its output; "fault_" device work fails; "checked_" device work
// counts the negative inputs, and a device check fails when there are any;
// "scratch_" device work writes its result to scratch of the launch first
// and copies it to the output 20 ms later; "aborts_" device work aborts the
// kernel's communicator, as NCCL's watchdog does, and ends without a fault.
struct Behaviour {
  bool slow = false;
  bool after_free = false;
  bool fault = false;
  bool checked = false;
  bool scratch = false;
  bool aborts = false;
  explicit Behaviour(const Node& node)
      : slow(node.name().find("slow_") != std::string::npos), after_free(node.name().starts_with("after_free_")),
        fault(node.name().starts_with("fault_")), checked(node.name().starts_with("checked_")),
        scratch(node.name().starts_with("scratch_")), aborts(node.name().starts_with("aborts_")) {}
};

std::atomic<int64_t> device_work_done_at_last_launch{-1};
std::atomic<bool> after_free_saw_a_free{false};

// Neg and Add of f32 tensors of equal sizes, as a GPU kernel computes them:
// the host part allocates the output and enqueues the arithmetic with raw
// pointers; the stream's thread does it later.
class DeferredKernel final : public OpKernel {
 public:
  explicit DeferredKernel(const Node& node) : behaviour_(node), add_(node.op_type() == "Add") {}

  void compute(KernelContext& ctx) override {
    auto* stream = static_cast<RunAheadStream*>(ctx.stream()->native_handle());
    device_work_done_at_last_launch = stream->device_work_done();
    const Tensor& x = ctx.input(0);
    if (add_ && ctx.input(1).sizes() != x.sizes()) ctx.fail("the fake device's Add does not broadcast");
    if (behaviour_.after_free) {
      auto& cache = device_caching_allocator(ctx.allocator().device());
      const auto deadline = std::chrono::steady_clock::now() + 5s;
      while (cache.cached_bytes() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
      after_free_saw_a_free = cache.cached_bytes() > 0;
    }
    Tensor& y = ctx.allocate_output(0, DType::kFloat32, x.sizes(), KernelContext::Fill::kUninitialized);
    const float* a = x.data<float>();
    const float* b = add_ ? ctx.input(1).data<float>() : nullptr;
    float* out = y.data<float>();
    const int64_t n = x.num_elements();
    const Behaviour behaviour = behaviour_;
    // The launch's own count, kept alive by the check that reads it.
    const Tensor counted =
        behaviour.checked ? Tensor::uninitialized(DType::kInt64, {1}, ctx.allocator()) : Tensor();
    int64_t* negatives = behaviour.checked ? static_cast<int64_t*>(counted.raw_data()) : nullptr;
    // Let go when compute() returns, as a CUDA kernel's workspace is.
    const cuda::LaunchScratch scratch =
        behaviour.scratch ? cuda::LaunchScratch(ctx, {static_cast<size_t>(n) * sizeof(float)}) : cuda::LaunchScratch();
    float* staged = behaviour.scratch ? scratch.part<float>(0) : nullptr;
    Communicator* group = behaviour.aborts ? ctx.communicator() : nullptr;
    if (behaviour.aborts && group == nullptr) ctx.fail("aborts_ needs a communicator");
    stream->enqueue([a, b, out, n, behaviour, negatives, staged, group] {
      if (behaviour.fault) throw Error(ErrorKind::kDevice, "an illegal memory access was encountered");
      if (behaviour.slow) std::this_thread::sleep_for(50ms);
      if (negatives != nullptr) *negatives = 0;
      float* result = staged != nullptr ? staged : out;
      for (int64_t i = 0; i < n; ++i) {
        if (negatives != nullptr && a[i] < 0) ++*negatives;
        result[i] = b != nullptr ? a[i] + b[i] : -a[i];
      }
      if (staged != nullptr) {
        std::this_thread::sleep_for(20ms);
        std::memcpy(out, staged, static_cast<size_t>(n) * sizeof(float));
      }
      if (group != nullptr) group->abort("the collective 'grad/w' passed its deadline");
    });
    if (behaviour.checked) {
      const Node& node = ctx.node();
      ctx.check_when_done([&node, counted] {
        const int64_t found = counted.data<int64_t>()[0];
        if (found > 0) fail_node(node, "found " + std::to_string(found) + " negative inputs");
      });
    }
  }

 private:
  Behaviour behaviour_;
  bool add_;
};

// A fake GPU of its own per test (the device caches are process-wide).
struct FakeGpu {
  Device device;
  KernelRegistry kernels;
  RunAheadHostBackend* backend = nullptr;  // the last session's

  explicit FakeGpu(int index) : device{DeviceType::kCuda, index} {
    for (const char* op : {"Neg", "Add"}) {
      kernels.add(op, DeviceType::kCuda, {DType::kFloat32},
                  [](const Node& node) { return std::make_unique<DeferredKernel>(node); });
    }
  }
  std::shared_ptr<const Plan> compile_here(const Graph& g) const {
    CompileOptions options;
    options.default_device = device;
    options.kernels = &kernels;
    options.plan_memory = false;
    return compile(g, options);
  }
  SessionOptions session_options() {
    SessionOptions options;
    options.device_memory = testing::fake_device_memory;
    options.make_backend = [this](const Device& d, Allocator& allocator) {
      auto made = std::make_unique<RunAheadHostBackend>(d, allocator);
      backend = made.get();
      return made;
    };
    return options;
  }
};

Value* neg(Graph& g, Value* x, const std::string& name, const std::string& stream = "") {
  Node* node = g.add_node("Neg", {x}, 1, {}, name);
  if (!stream.empty()) node->set_stream(stream);
  return node->output(0);
}

TEST(RunAhead, TheHostLaunchesAChainBeforeTheDeviceHasDoneItAndTheResultsAreTheCpus) {
  Graph g("chain");
  Value* v = g.add_input("x", {DType::kFloat32, Shape{1000}});
  for (int i = 0; i < 6; ++i) v = neg(g, v, "slow_" + std::to_string(i));
  v = g.add_node("Add", {v, g.inputs()[0]}, 1, {}, "last")->output(0);
  g.add_output(v);
  infer_graph_types(g, default_op_registry());
  Tensor x = random_tensor({1000}, 3);
  const std::vector<Tensor> expected = Session(compile(g)).run({{"x", x}});

  FakeGpu gpu(40);
  std::shared_ptr<const Plan> plan = gpu.compile_here(g);
  Session session(plan, gpu.session_options());
  ASSERT_NE(gpu.backend, nullptr);
  const RunAheadStream& compute = gpu.backend->run_ahead_stream({StreamKind::kCompute, 0});
  for (int run = 0; run < 2; ++run) {
    const int64_t before = compute.device_work_done();
    std::vector<Tensor> got = session.run({{"x", x}});
    EXPECT_TRUE(got[0].bitwise_equal(expected[0])) << "run " << run;
    // Each of the six slow steps takes 50 ms on the device; the host
    // launched the last step long before they were done.
    EXPECT_LT(device_work_done_at_last_launch.load() - before, 3) << "run " << run;
  }
  SessionOptions waiting = gpu.session_options();
  waiting.wait_for_each_step = true;
  Session one_by_one(plan, waiting);
  EXPECT_TRUE(one_by_one.run({{"x", x}})[0].bitwise_equal(expected[0]));
  EXPECT_GE(device_work_done_at_last_launch.load(), 6) << "the device had done each step before the next";
}

TEST(RunAhead, AStepOnAnotherStreamReadsItsInputOnlyOnceTheProducerHasWrittenIt) {
  Graph g("two_streams");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{512}});
  Value* a = neg(g, x, "slow_a");           // compute: written 50 ms after its launch
  g.add_output(neg(g, a, "b", "side"));     // its own stream: would read a at once
  infer_graph_types(g, default_op_registry());
  Tensor x_value = random_tensor({512}, 5);
  FakeGpu gpu(41);
  Session session(gpu.compile_here(g), gpu.session_options());
  for (int run = 0; run < 3; ++run) {
    Tensor b = session.run({{"x", x_value}})[0];
    EXPECT_TRUE(b.bitwise_equal(x_value)) << "run " << run << ": b = -(-x)";
  }
  ASSERT_NE(gpu.backend, nullptr);
  EXPECT_GE(gpu.backend->waits(), 3) << "the side stream waited on the compute stream's event, on the device";
}

// Runs `g` (x [4096] -> a -> slow_b, and after_free_d) on fake GPU `index`
// and on the CPU: after_free_d allocates once a is freed, while slow_b's
// device work has yet to read a; given a's block, it would change slow_b's
// result.
void expect_slow_b_reads_its_own_a(Graph& g, int index) {
  infer_graph_types(g, default_op_registry());
  Tensor x_value = random_tensor({4096}, static_cast<uint32_t>(index));
  const std::vector<Tensor> expected = Session(compile(g)).run({{"x", x_value}});
  FakeGpu gpu(index);
  Session session(gpu.compile_here(g), gpu.session_options());
  after_free_saw_a_free = false;
  std::vector<Tensor> got = session.run({{"x", x_value}});
  ASSERT_TRUE(after_free_saw_a_free.load()) << "a was not freed while slow_b ran: the test shows nothing";
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].bitwise_equal(expected[0])) << "slow_b read memory given to after_free_d";
  EXPECT_TRUE(got[1].bitwise_equal(expected[1]));
}

TEST(RunAhead, MemoryAnotherStreamStillReadsIsNotGivenToANewOutput) {
  // a is read by slow_b on its own stream, which reads it 50 ms after its
  // launch. The host frees a once slow_b is launched; after_free_d then
  // allocates an output of a's size on the compute stream, whose device
  // work writes it at once. Were a's block d's, slow_b would read 2x.
  Graph g("reuse");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4096}});
  g.add_output(neg(g, neg(g, x, "a"), "slow_b", "side"));
  g.add_output(g.add_node("Add", {x, x}, 1, {}, "after_free_d")->output(0));
  expect_slow_b_reads_its_own_a(g, 42);
}

TEST(RunAhead, MemoryAStreamFreesIsNotGivenToAnotherStream) {
  // a is produced and read on the compute stream only; slow_b reads it 50
  // ms after its launch. The host frees a once slow_b is launched, and
  // after_free_d on another stream then allocates an output of a's size,
  // which its device work writes at once: a's block must stay the compute
  // stream's until its work has got past slow_b.
  Graph g("streams_own");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4096}});
  g.add_output(neg(g, neg(g, x, "a"), "slow_b"));
  Node* d = g.add_node("Add", {x, x}, 1, {}, "after_free_d");
  d->set_stream("side");
  g.add_output(d->output(0));
  expect_slow_b_reads_its_own_a(g, 45);
}

TEST(RunAhead, AStreamsOwnMemoryIsReusedRunAfterRun) {
  Graph g("chain");
  Value* v = g.add_input("x", {DType::kFloat32, Shape{2048}});
  for (int i = 0; i < 8; ++i) v = neg(g, v, "n" + std::to_string(i));
  g.add_output(v);
  infer_graph_types(g, default_op_registry());
  Tensor x = random_tensor({2048}, 9);
  FakeGpu gpu(43);
  Session session(gpu.compile_here(g), gpu.session_options());
  CachingAllocator& cache = device_caching_allocator(gpu.device);
  session.run({{"x", x}});
  session.run({{"x", x}});
  const int64_t system = cache.system_allocations();
  for (int run = 0; run < 3; ++run) EXPECT_TRUE(session.run({{"x", x}})[0].bitwise_equal(x));
  EXPECT_EQ(cache.system_allocations(), system) << "later runs take the blocks earlier runs freed";
  // Within a run, a freed block goes to the next output of its stream:
  // two blocks serve the chain of eight.
  EXPECT_LE(session.memory_stats(gpu.device).stats.peak_bytes - 2048 * 4, 3 * 8192);
}

TEST(RunAhead, ADeviceFaultIsReportedAtTheRunsEndAndWaitingForEachStepNamesTheNode) {
  Graph g("fault");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{64}});
  g.add_output(neg(g, neg(g, neg(g, x, "first"), "fault_second"), "third"));
  infer_graph_types(g, default_op_registry());
  Tensor x_value = random_tensor({64}, 11);
  FakeGpu gpu(44);
  std::shared_ptr<const Plan> plan = gpu.compile_here(g);
  {
    Session session(plan, gpu.session_options());
    std::string error = error_of([&] { session.run({{"x", x_value}}); });
    EXPECT_NE(error.find("the run's device work failed"), std::string::npos) << error;
    EXPECT_NE(error.find("illegal memory access"), std::string::npos) << error;
    EXPECT_NE(error.find("WEIR_SYNC_STEPS=1"), std::string::npos) << error;
  }
  SessionOptions waiting = gpu.session_options();
  waiting.wait_for_each_step = true;
  Session session(plan, waiting);
  std::string error = error_of([&] { session.run({{"x", x_value}}); });
  EXPECT_NE(error.find("fault_second"), std::string::npos) << error;
  EXPECT_NE(error.find("illegal memory access"), std::string::npos) << error;
}

TEST(RunAhead, DeviceChecksAreMadeOnceTheWorkIsDoneAndNameTheirNode) {
  // checked_slow_b's device work counts x's negatives 50 ms after its
  // launch; a check made when the step was launched would find none.
  Graph g("checked");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{32}});
  g.add_output(neg(g, neg(g, x, "checked_slow_b"), "c"));
  infer_graph_types(g, default_op_registry());
  Tensor some_negative = random_tensor({32}, 13);
  std::vector<float> positive(32, 0.5f);
  FakeGpu gpu(46);
  std::shared_ptr<const Plan> plan = gpu.compile_here(g);
  for (bool wait : {false, true}) {
    SessionOptions options = gpu.session_options();
    options.wait_for_each_step = wait;
    Session session(plan, options);
    const std::string error = error_of([&] { session.run({{"x", some_negative}}); });
    EXPECT_NE(error.find("node 'checked_slow_b'"), std::string::npos) << error;
    EXPECT_NE(error.find("negative inputs (Neg on cuda:46)"), std::string::npos) << error;
    Tensor fine = Tensor::from_vector<float>(positive, {32});
    EXPECT_TRUE(session.run({{"x", fine}})[0].bitwise_equal(fine)) << "wait " << wait << ": the session stays usable";
  }
  // Run without a runtime that takes checks, the kernel's stream is
  // synchronized and the check made at once.
  SessionOptions options = gpu.session_options();
  Session holder(plan, options);  // makes the backend and its streams
  RunAheadStream& stream = gpu.backend->run_ahead_stream({StreamKind::kCompute, 0});
  DeferredKernel kernel(*plan->graph().find_node("checked_slow_b"));
  KernelContext ctx(*plan->graph().find_node("checked_slow_b"), {some_negative}, cpu_allocator());
  ctx.set_stream(&stream);
  const std::string error = error_of([&] { kernel.compute(ctx); });
  EXPECT_NE(error.find("Neg 'checked_slow_b': found"), std::string::npos) << error;
}

TEST(RunAhead, ScratchOfALaunchIsNotSharedByTwoSessionsOfOnePlanRunningAtOnce) {
  // Both sessions' scratch_a write their result to scratch and copy it out
  // 20 ms later, on their own streams, at the same time: scratch shared by
  // the kernel (a member, as the CUDA kernels' workspaces once were) would
  // hand one session the other's numbers.
  Graph g("scratch");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{1024}});
  g.add_output(neg(g, x, "scratch_a"));
  infer_graph_types(g, default_op_registry());
  FakeGpu gpu(47);
  std::shared_ptr<const Plan> plan = gpu.compile_here(g);
  Session first(plan, gpu.session_options());
  Session second(plan, gpu.session_options());
  auto runs = [&](Session& session, uint32_t seed, int& wrong) {
    Tensor x_value = random_tensor({1024}, seed);
    std::vector<float> expected(1024);
    for (int64_t i = 0; i < 1024; ++i) expected[static_cast<size_t>(i)] = -x_value.data<float>()[i];
    const Tensor want = Tensor::from_vector<float>(expected, {1024});
    for (int run = 0; run < 6; ++run) {
      if (!session.run({{"x", x_value}})[0].bitwise_equal(want)) ++wrong;
    }
  };
  int wrong_first = 0, wrong_second = 0;
  std::thread other([&] { runs(second, 21, wrong_second); });
  runs(first, 20, wrong_first);
  other.join();
  EXPECT_EQ(wrong_first, 0) << "runs of the first session that got other numbers";
  EXPECT_EQ(wrong_second, 0) << "runs of the second session that got other numbers";
}

TEST(RunAhead, ARunWhoseGroupWasAbortedWhileItsDeviceWorkRanFailsNamingTheReason) {
  // aborts_b's device work aborts the world's group and ends without a
  // fault, as an NCCL collective does when the watchdog aborts it: every
  // step's device work completes, and only the group knows.
  Graph g("aborted");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{16}});
  g.add_output(neg(g, neg(g, x, "aborts_b"), "c"));
  infer_graph_types(g, default_op_registry());
  Tensor x_value = random_tensor({16}, 17);
  FakeGpu gpu(48);
  std::shared_ptr<const Plan> plan = gpu.compile_here(g);
  for (bool wait : {false, true}) {
    InProcessWorldOptions one_rank;
    one_rank.devices = {gpu.device};
    SessionOptions options = gpu.session_options();
    options.wait_for_each_step = wait;
    options.world = make_in_process_world(1, one_rank)[0];
    Session session(plan, options);
    const std::string error = error_of([&] { session.run({{"x", x_value}}); });
    EXPECT_NE(error.find("were cut short: the group was aborted: the collective 'grad/w' passed its deadline"),
              std::string::npos)
        << "wait " << wait << ": " << error;
  }
}

}  // namespace
}  // namespace weir
