// Backends, streams and events: stream names, the CPU backend (work at once,
// errors carried by events, copies and fills against memcpy/memset), the
// asynchronous test backend (launch returns before the work is done; events
// time out with kDevice), and the session on that backend: the same results
// bit for bit, failures named, every step launched on its stream.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>

#include "core/error.h"
#include "ops/graph_evaluator.h"
#include "ops/register_ops.h"
#include "runtime/cpu_backend.h"
#include "runtime/session.h"
#include "tests/async_host_backend.h"
#include "tests/runtime/runtime_test_util.h"

namespace weir {
namespace {

using testing::error_of;
using testing::random_tensor;
using namespace std::chrono_literals;

TEST(StreamId, NamesRoundTripAndBadNamesAreRefused) {
  for (const char* name : {"compute", "comm", "comm:3", "copy", "compute:2"}) {
    EXPECT_EQ(StreamId::parse(name).to_string(), name);
  }
  EXPECT_EQ(StreamId::parse("comm:1"), (StreamId{StreamKind::kCommunication, 1}));
  EXPECT_EQ(StreamId::parse("comm:0").to_string(), "comm");
  for (const char* bad : {"", "gpu", "comm:", "comm:-1", "comm:x", "comm:1:2", "Compute"}) {
    std::string error = error_of([&] { StreamId::parse(bad); });
    EXPECT_NE(error.find("expected compute, comm or copy"), std::string::npos) << bad << ": " << error;
  }
}

TEST(CpuBackend, RunsWorkAtOnceAndEventsCarryErrors) {
  std::unique_ptr<Backend> cpu = make_cpu_backend(Device::cpu(1), cpu_allocator());
  EXPECT_EQ(cpu->device(), Device::cpu(1));
  Stream& comm = cpu->stream({StreamKind::kCommunication, 1});
  EXPECT_EQ(&comm, &cpu->stream({StreamKind::kCommunication, 1}));
  EXPECT_NE(&comm, &cpu->stream({StreamKind::kCommunication, 0}));
  EXPECT_EQ(comm.id().to_string(), "comm:1");
  EXPECT_EQ(comm.device(), Device::cpu(1));
  int ran = 0;
  std::shared_ptr<Event> done = comm.launch([&] { ++ran; });
  EXPECT_EQ(ran, 1);  // before anyone waits: host streams run work at once
  EXPECT_TRUE(done->query());
  done->synchronize(1s);
  std::shared_ptr<Event> failed = comm.launch([] { throw Error(ErrorKind::kShape, "bad shape in the kernel"); });
  EXPECT_TRUE(failed->query());
  EXPECT_NE(error_of([&] { failed->synchronize(1s); }).find("bad shape in the kernel"), std::string::npos);
  comm.record()->synchronize(1s);  // an error stays with its own event
  EXPECT_NE(error_of([] { make_cpu_backend(Device::cuda(0), cpu_allocator()); }).find("cannot serve device cuda:0"),
            std::string::npos);
}

TEST(CpuBackend, CopiesAndFillsLikeMemcpyAndMemset) {
  std::unique_ptr<Backend> cpu = make_cpu_backend(Device::cpu(), cpu_allocator());
  Stream& copy = cpu->stream({StreamKind::kCopy, 0});
  for (int64_t n : {0, 1, 7, 1000}) {
    Tensor source = random_tensor({n}, static_cast<uint32_t>(n + 1));
    Tensor destination = random_tensor({n}, 99);
    cpu->copy(source, destination, copy)->synchronize(1s);
    EXPECT_TRUE(destination.bitwise_equal(source)) << n;
    cpu->fill_zero(destination, copy)->synchronize(1s);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(destination.data<float>()[i], 0.0f) << n;
  }
  Tensor a = random_tensor({4}, 1), b = random_tensor({5}, 2);
  EXPECT_NE(error_of([&] { cpu->copy(a, b, copy); }).find("f32[4] and destination f32[5] differ"), std::string::npos);
}

TEST(AsyncHostBackend, LaunchReturnsBeforeTheWorkIsDoneAndEventsTimeOut) {
  testing::AsyncHostBackend backend(Device::cpu(), cpu_allocator());
  Stream& stream = backend.stream({StreamKind::kCompute, 0});
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> order{0};
  std::shared_ptr<Event> first = stream.launch([&] {
    gate.wait();
    order = order * 10 + 1;
  });
  std::shared_ptr<Event> second = stream.launch([&] { order = order * 10 + 2; });
  EXPECT_FALSE(first->query());
  auto start = std::chrono::steady_clock::now();
  std::string error = error_of([&] { second->synchronize(50ms, "node 'late'"); });
  EXPECT_NE(error.find("node 'late' did not complete within 50 ms"), std::string::npos) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  release.set_value();
  second->synchronize(10s);
  EXPECT_EQ(order.load(), 12);  // in launch order
  // One stream waits on another's event.
  Stream& other = backend.stream({StreamKind::kCommunication, 0});
  std::promise<void> release_other;
  std::shared_future<void> other_gate = release_other.get_future().share();
  std::atomic<bool> produced{false};
  std::shared_ptr<Event> producer = stream.launch([&] {
    other_gate.wait();
    produced = true;
  });
  other.wait(producer);
  std::atomic<bool> saw{false};
  std::shared_ptr<Event> consumer = other.launch([&] { saw = produced.load(); });
  release_other.set_value();
  consumer->synchronize(10s);
  EXPECT_TRUE(saw.load());
}

// Sessions on the asynchronous backend; `made`, when given, gets the
// (last) backend the session makes, for its counters.
SessionOptions async_options(testing::AsyncHostBackend** made = nullptr) {
  SessionOptions options;
  options.make_backend = [made](const Device& device, Allocator& allocator) {
    auto backend = std::make_unique<testing::AsyncHostBackend>(device, allocator);
    if (made != nullptr) *made = backend.get();
    return backend;
  };
  return options;
}

TEST(SessionOnAnAsyncBackend, GivesTheCpuBackendsResultsBitForBit) {
  auto g = testing::resnet_style_graph(3, 8, 16);
  Tensor x = random_tensor({1, 3, 16, 16}, 1);
  std::shared_ptr<const Plan> plan = compile(*g);
  std::vector<Tensor> expected = Session(plan).run({{"x", x}});
  testing::AsyncHostBackend* backend = nullptr;
  SessionOptions options = async_options(&backend);
  options.inter_op_threads = 2;
  Session session(plan, options);
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> got = session.run({{"x", x}});
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].bitwise_equal(expected[i])) << "run " << run;
  }
  // Every step of every run went through the backend's streams, and so did
  // the copies and fills the session made (state at start, outputs out of
  // the arena, zeroed outputs).
  ASSERT_NE(backend, nullptr);
  EXPECT_GE(backend->launched(), 3 * static_cast<int64_t>(plan->schedule().steps.size()));
  EXPECT_GT(backend->fills(), 0) << "zero-filled outputs are filled through the backend";
  EXPECT_EQ(backend->launched(), 3 * static_cast<int64_t>(plan->schedule().steps.size()) + backend->copies() +
                                     backend->fills());
}

// Persistent state reaches the device through the backend: the initial
// value is copied in at start, set_state() copies in, zero-initialized
// state is filled; the run reads what was copied.
TEST(SessionOnAnAsyncBackend, StateIsCopiedAndFilledThroughTheBackend) {
  Graph g("state");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{4}});
  Value* w = g.add_persistent("w", {DType::kFloat32, Shape{4}}, PersistentRole::kParameter,
                              Tensor::from_vector<float>({1, 2, 3, 4}, {4}));
  Value* zeros = g.add_persistent("zeros", {DType::kFloat32, Shape{4}}, PersistentRole::kOptimizerState);
  Node* scaled = g.add_node("Mul", {x, w}, 1, {}, "scaled");
  g.add_output(g.add_node("Add", {scaled->output(0), zeros}, 1, {}, "plus_zeros")->output(0));
  infer_graph_types(g, default_op_registry());
  testing::AsyncHostBackend* backend = nullptr;
  SessionOptions options = async_options(&backend);
  Session session(compile(g), options);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->copies(), 1) << "w's initial value";
  EXPECT_EQ(backend->fills(), 1) << "zeros";
  Tensor x_value = Tensor::from_vector<float>({1, 1, 1, 1}, {4});
  Tensor y = session.run({{"x", x_value}})[0];
  EXPECT_EQ(y.data<float>()[3], 4.0f);
  session.set_state("w", Tensor::from_vector<float>({5, 6, 7, 8}, {4}));
  EXPECT_EQ(backend->copies(), 2) << "set_state";
  y = session.run({{"x", x_value}})[0];
  EXPECT_EQ(y.data<float>()[0], 5.0f);
  EXPECT_EQ(y.data<float>()[3], 8.0f);
}

// A device that is not the host's, faked: "cuda:5" whose memory is host
// memory under that device's name, the asynchronous backend, and the CPU
// kernels registered for it. The session has no CPU device to fall back on,
// so everything that depends on where memory lives (constants and feeds
// copied in, arenas from the device's allocator, zero-filled outputs,
// results copied back to the host) must go through the backend and the
// device's allocator: it gives the CPU session's results bit for bit.
TEST(SessionOnAFakeAccelerator, RunsWithoutHostAssumptions) {
  const Device fake{DeviceType::kCuda, 5};
  static CpuAllocator* fake_memory = new CpuAllocator(fake);  // outlives the tensors made from it
  auto g = testing::resnet_style_graph(2, 8, 12);
  Tensor x = random_tensor({1, 3, 12, 12}, 4);
  std::shared_ptr<const Plan> cpu_plan = compile(*g);
  std::vector<Tensor> expected = Session(cpu_plan).run({{"x", x}});

  KernelRegistry kernels;
  register_cpu_kernels(kernels);  // not the real CUDA kernels of a CUDA build: this device's memory is the host's
  for (const Node* node : cpu_plan->graph().nodes()) {
    KernelOp op(node->domain(), node->op_type());
    DType dtype = kernel_dtype(*node);
    if (kernels.find(op, fake.type, dtype) == nullptr) kernels.add(op, fake.type, {dtype}, *kernels.find(op, DeviceType::kCpu, dtype));
  }
  CompileOptions compile_options;
  compile_options.default_device = fake;
  compile_options.kernels = &kernels;
  std::shared_ptr<const Plan> plan = compile(*g, compile_options);
  testing::AsyncHostBackend* backend = nullptr;
  SessionOptions options = async_options(&backend);
  options.device_memory = [](const Device&) -> Allocator& { return *fake_memory; };
  Session session(plan, options);
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> got = session.run({{"x", x}});
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].device(), Device::cpu()) << "outputs come back to the host";
      EXPECT_TRUE(got[i].bitwise_equal(expected[i])) << "run " << run;
    }
  }
  ASSERT_NE(backend, nullptr);
  EXPECT_GT(backend->copies(), 0) << "constants and the feed are copied in";
  EXPECT_GT(session.memory_stats(fake).stats.peak_bytes, 0);
  EXPECT_GT(fake_memory->stats().num_allocations, 0) << "the device's memory came from its allocator";

  // Without memory for the device, the session says so.
  const Device bare{DeviceType::kCuda, 6};
  compile_options.default_device = bare;
  try {
    Session nowhere(compile(*g, compile_options), async_options());
    FAIL() << "a session without memory for cuda:6 started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no memory for cuda:6"), std::string::npos) << e.what();
  }
}

// "state": y = x * w, w [4] = 1, 2, 3, 4.
std::unique_ptr<Graph> scaled_by_w() {
  auto g = std::make_unique<Graph>("state");
  Value* x = g->add_input("x", {DType::kFloat32, Shape{4}});
  Value* w = g->add_persistent("w", {DType::kFloat32, Shape{4}}, PersistentRole::kParameter,
                               Tensor::from_vector<float>({1, 2, 3, 4}, {4}));
  g->add_output(g->add_node("Mul", {x, w}, 1, {}, "scaled")->output(0));
  infer_graph_types(*g, default_op_registry());
  return g;
}

// `g`'s plan on `fake`, the CPU Mul registered for that device (its memory is the host's).
std::shared_ptr<const Plan> plan_on(const Graph& g, const Device& fake) {
  static KernelRegistry* kernels = [] {
    auto* registry = new KernelRegistry();
    register_cpu_kernels(*registry);
    return registry;
  }();
  if (kernels->find(KernelOp("", "Mul"), fake.type, DType::kFloat32) == nullptr) {
    kernels->add("Mul", fake.type, {DType::kFloat32}, *kernels->find(KernelOp("", "Mul"), DeviceType::kCpu, DType::kFloat32));
  }
  CompileOptions compile_options;
  compile_options.default_device = fake;
  compile_options.kernels = kernels;
  return compile(g, compile_options);
}

// A feed is best made where its reading device copies from fastest: that
// backend's host memory (pinned for a GPU; faked here). A data loader
// assembles batches there (DataLoaderOptions::batch_memory), and a feed
// made there runs as any other.
TEST(SessionOnAFakeAccelerator, FeedsAreBestMadeInTheReadingBackendsHostMemory) {
  const Device fake{DeviceType::kCuda, 8};
  static CpuAllocator* fake_memory = new CpuAllocator(fake);  // outlives the tensors made from it
  static CpuAllocator* pinned = new CpuAllocator();           // the fake GPU's pinned host memory
  auto g = scaled_by_w();
  SessionOptions options;
  options.make_backend = [](const Device& device, Allocator& allocator) {
    return std::make_unique<testing::AsyncHostBackend>(device, allocator, pinned);
  };
  options.device_memory = [](const Device&) -> Allocator& { return *fake_memory; };
  Session session(plan_on(*g, fake), options);
  EXPECT_EQ(&session.feed_allocator("x"), pinned);
  Tensor feed = Tensor::uninitialized(DType::kFloat32, {4}, session.feed_allocator("x"));
  for (int i = 0; i < 4; ++i) feed.data<float>()[i] = 2.0f;
  EXPECT_TRUE(session.run({{"x", feed}})[0].bitwise_equal(Tensor::from_vector<float>({2, 4, 6, 8}, {4})));
  try {
    session.feed_allocator("w");
    FAIL() << "a parameter was taken for a feed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'w' is not an input of graph 'state'"), std::string::npos) << e.what();
  }
  Session on_cpu(compile(*g));
  EXPECT_EQ(&on_cpu.feed_allocator("x"), &cpu_allocator()) << "a CPU reads the host's own memory";
}

// host_state() hands host code a host copy of state that lives on a device
// (checkpoints and baked weights read it), and state() itself on a CPU.
TEST(SessionOnAFakeAccelerator, HostStateIsAHostCopyOfDeviceState) {
  const Device fake{DeviceType::kCuda, 7};
  static CpuAllocator* fake_memory = new CpuAllocator(fake);  // outlives the tensors made from it
  auto g = scaled_by_w();
  SessionOptions options = async_options();
  options.device_memory = [](const Device&) -> Allocator& { return *fake_memory; };
  Session session(plan_on(*g, fake), options);
  EXPECT_EQ(session.state("w").device(), fake);
  session.set_state("w", Tensor::from_vector<float>({5, 6, 7, 8}, {4}));
  Tensor host = session.host_state("w");
  EXPECT_EQ(host.device(), Device::cpu());
  EXPECT_TRUE(host.bitwise_equal(Tensor::from_vector<float>({5, 6, 7, 8}, {4})));
  EXPECT_NE(host.raw_data(), session.state("w").raw_data()) << "a copy, not the device's memory";

  Session on_cpu(compile(*g));
  EXPECT_EQ(on_cpu.host_state("w").raw_data(), on_cpu.state("w").raw_data()) << "on a CPU, the state itself";
}

TEST(SessionOnAnAsyncBackend, CollectivesAndAFailingKernelAreNamed) {
  // Device 1 gathers with a fed index, then both devices all-reduce.
  Graph g("failing");
  Value* data = g.add_input("data", {DType::kFloat32, Shape{4, 3}});
  Value* index = g.add_input("index", {DType::kInt64, Shape{4}});
  Node* early = g.add_node("Relu", {data}, 1, {}, "early");
  early->set_device(Device::cpu(0));
  Node* r0 = g.add_node("AllReduce", {early->output(0)}, 1, {{"tag", Attribute(std::string("sum"))}}, "reduce0");
  r0->set_device(Device::cpu(0));
  Node* gather = g.add_node("Gather", {data, index}, 1, {}, "bad_gather");
  gather->set_device(Device::cpu(1));
  Node* r1 = g.add_node("AllReduce", {gather->output(0)}, 1, {{"tag", Attribute(std::string("sum"))}}, "reduce1");
  r1->set_device(Device::cpu(1));
  g.add_output(r0->output(0));
  g.add_output(r1->output(0));
  CompileOptions compile_options;
  compile_options.devices = {Device::cpu(0), Device::cpu(1)};
  std::shared_ptr<const Plan> plan = compile(g, compile_options);
  Tensor d = random_tensor({4, 3}, 2);
  Tensor good = Tensor::from_vector<int64_t>({3, 2, 1, 0}, {4});
  std::vector<Tensor> expected = Session(plan).run({{"data", d}, {"index", good}});
  SessionOptions options = async_options();
  options.collective_timeout = std::chrono::seconds(60);
  Session session(plan, options);
  std::vector<Tensor> got = session.run({{"data", d}, {"index", good}});
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].bitwise_equal(expected[i])) << i;
  auto start = std::chrono::steady_clock::now();
  std::string error = error_of([&] { session.run({{"data", d}, {"index", Tensor::from_vector<int64_t>({0, 1, 2, 9}, {4})}}); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_NE(error.find("bad_gather"), std::string::npos) << error;
  EXPECT_NE(error.find("cpu:1"), std::string::npos) << error;
  got = session.run({{"data", d}, {"index", good}});
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].bitwise_equal(expected[i])) << "after the failure, " << i;
}

TEST(SessionOnAnAsyncBackend, AStepThatOverrunsItsTimeoutFailsNamingTheNode) {
  // A backend whose streams never run anything: every step overruns.
  struct StuckStream final : Stream {
    Device device() const override { return Device::cpu(); }
    StreamId id() const override { return {}; }
    std::shared_ptr<Event> launch(std::function<void()>) override { return std::make_shared<testing::AsyncEvent>(); }
    std::shared_ptr<Event> record() override { return std::make_shared<testing::AsyncEvent>(); }
    void wait(std::shared_ptr<Event>) override {}
  };
  struct StuckBackend final : Backend {
    StuckStream stuck;
    Device device() const override { return Device::cpu(); }
    Allocator& allocator() override { return cpu_allocator(); }
    Stream& stream(StreamId) override { return stuck; }
    std::shared_ptr<Event> copy(const Tensor&, Tensor&, Stream&) override { return completed_event(); }
    std::shared_ptr<Event> fill_zero(Tensor&, Stream&) override { return completed_event(); }
    void synchronize(std::chrono::milliseconds) override {}
  };
  Graph g("one");
  Value* x = g.add_input("x", {DType::kFloat32, Shape{3}});
  g.add_output(g.add_node("Relu", {x}, 1, {}, "stuck_relu")->output(0));
  SessionOptions options;
  options.step_timeout = 100ms;
  options.make_backend = [](const Device&, Allocator&) { return std::make_unique<StuckBackend>(); };
  Session session(compile(g), options);
  auto start = std::chrono::steady_clock::now();
  std::string error = error_of([&] { session.run({{"x", random_tensor({3}, 1)}}); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_NE(error.find("stuck_relu"), std::string::npos) << error;
  EXPECT_NE(error.find("did not complete within 100 ms"), std::string::npos) << error;
}

}  // namespace
}  // namespace weir
