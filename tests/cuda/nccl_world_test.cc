// The NCCL world (distributed/nccl/). Without a GPU: the unique id's
// exchange through the TCP store, and a rank refused, by name, when its GPU
// is missing. On a GPU: a world of one process reduces, gathers and
// broadcasts host and device tensors (host calls and calls on a CUDA
// stream), a stream call overdue aborts the world naming it, and LeNet trains on the GPU, alone and as an NCCL world of one,
// like the CPU within 1e-4 per step.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_device.h"
#include "core/error.h"
#include "distributed/nccl/nccl_communicator.h"
#include "distributed/nccl/nccl_world.h"
#include "distributed/tcp_store.h"
#include "models/train_classifier.h"
#include "runtime/cuda_backend.h"
#include "tests/distributed/process_group.h"
#include "tests/ops/op_test_util.h"
#include "tests/test_util.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

LaunchEnvironment world_of_one(int port) {
  LaunchEnvironment launch;
  launch.master_port = port;
  launch.source = "test";
  return launch;
}

TEST(NcclUniqueId, IsExchangedThroughTheStore) {
  TcpStoreServer server(0);
  TcpStore first("127.0.0.1", server.port(), 10s);
  TcpStore second("127.0.0.1", server.port(), 10s);
  std::string read;
  // The reader starts first: it waits for the key.
  std::thread reader([&] { read = exchange_nccl_unique_id(second, "job/nccl/0,1/comm", false); });
  std::string made = exchange_nccl_unique_id(first, "job/nccl/0,1/comm", true);
  reader.join();
  EXPECT_EQ(made.size(), 128u);  // sizeof(ncclUniqueId)
  EXPECT_EQ(read, made);
  // Another key (another group or stream) gets another id.
  EXPECT_NE(exchange_nccl_unique_id(first, "job/nccl/0,1/comm:1", true), made);
}

TEST(NcclUniqueId, AMissingFirstRankFailsAtTheTimeoutNamingTheKey) {
  TcpStoreServer server(0);
  TcpStore store("127.0.0.1", server.port(), 300ms);
  const auto start = std::chrono::steady_clock::now();
  std::string message = testing::error_of([&] { exchange_nccl_unique_id(store, "job/nccl/0,1/compute", false); },
                                          ErrorKind::kCommunication);
  EXPECT_NE(message.find("job/nccl/0,1/compute"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(NcclWorld, RefusesARankWhoseGpuIsMissingNamingIt) {
  NcclWorldOptions options;
  options.device_index = 99;
  std::string message = testing::error_of([&] { make_nccl_world(world_of_one(testing::unused_port()), options); },
                                          ErrorKind::kDevice);
  EXPECT_NE(message.find("cuda:99"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 0"), std::string::npos) << message;
}

class NcclOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(NcclOnGpu, AWorldOfOneReducesGathersAndBroadcastsHostTensors) {
  std::shared_ptr<World> world = make_nccl_world(world_of_one(testing::unused_port()), {.timeout = 60s});
  EXPECT_EQ(world->device(), Device::cuda(0));
  std::shared_ptr<Communicator> comm = world->communicator();
  Tensor x = testing::random_tensor(DType::kFloat32, {3, 5}, 1);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    Tensor y(DType::kFloat32, {3, 5});
    comm->all_reduce(x, y, op, {.tag = "host"});
    EXPECT_TRUE(y.bitwise_equal(x)) << reduce_op_name(op);  // one rank: the reduction is the input
  }
  Tensor gathered = comm->all_gather(x, "gather");
  EXPECT_TRUE(gathered.bitwise_equal(x));
  Tensor b = testing::random_tensor(DType::kFloat16, {7}, 2);
  Tensor b_out(DType::kFloat16, {7});
  comm->broadcast(b, b_out, 0, {.tag = "broadcast"});
  EXPECT_TRUE(b_out.bitwise_equal(b));
  comm->barrier("barrier");
}

TEST_F(NcclOnGpu, CallsOnACudaStreamAreEnqueuedThere) {
  std::shared_ptr<World> world = make_nccl_world(world_of_one(testing::unused_port()), {.timeout = 60s});
  Allocator& memory = cuda_device_memory(0);
  std::unique_ptr<Backend> gpu = make_cuda_backend(Device::cuda(0), memory);
  Stream& comm_stream = gpu->stream({StreamKind::kCommunication, 0});
  Tensor x = testing::random_tensor(DType::kFloat32, {1000}, 3);
  Tensor on_device = copy_to_device(x, memory);
  Tensor reduced(DType::kFloat32, {1000}, memory);
  world->communicator()->all_reduce(on_device, reduced, ReduceOp::kAvg, {.tag = "grad", .stream = &comm_stream});
  comm_stream.record()->synchronize(30s, "the all-reduce");
  EXPECT_TRUE(copy_to_host(reduced).bitwise_equal(x));
  // A host tensor on a stream call is refused, naming it.
  Tensor host_out(DType::kFloat32, {1000});
  std::string message = testing::error_of(
      [&] { world->communicator()->all_reduce(on_device, host_out, ReduceOp::kSum, {.tag = "bad", .stream = &comm_stream}); },
      ErrorKind::kInvalidArgument);
  EXPECT_NE(message.find("cuda:0 memory only"), std::string::npos) << message;
}

// A call on a stream that the stream has not passed by its timeout (here
// the stream is held up by a host function, as by a rank that never calls)
// aborts the world, and later calls fail naming it. In a re-executed child
// process ("threadsafe" death-test style): the aborted communicator's
// kernels never touch this process's GPU context.
// The child's part: exits 0 when the later call's error names the late one.
[[noreturn]] void run_a_call_the_stream_does_not_reach_in_time() {
  std::shared_ptr<World> world = make_nccl_world(world_of_one(testing::unused_port()), {.timeout = 60s});
  Allocator& memory = cuda_device_memory(0);
  std::unique_ptr<Backend> gpu = make_cuda_backend(Device::cuda(0), memory);
  Stream& comm_stream = gpu->stream({StreamKind::kCommunication, 0});
  Tensor on_device = copy_to_device(testing::random_tensor(DType::kFloat32, {64}, 4), memory);
  Tensor reduced(DType::kFloat32, {64}, memory);
  // The stream's communicator made first, with time to spare: NCCL's init
  // (topology, buffers, its kernels' module) may take longer than 200 ms.
  world->communicator()->all_reduce(on_device, reduced, ReduceOp::kSum, {.tag = "warm", .stream = &comm_stream});
  comm_stream.record()->synchronize(30s, "the warm-up all-reduce");
  auto hold = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(1500)); };
  cudaLaunchHostFunc(static_cast<cudaStream_t>(comm_stream.native_handle()), hold, nullptr);
  CommCall late{.tag = "late", .timeout = 200ms, .stream = &comm_stream};
  world->communicator()->all_reduce(on_device, reduced, ReduceOp::kSum, late);
  std::this_thread::sleep_for(800ms);
  Tensor x(DType::kFloat32, {1});
  Tensor y(DType::kFloat32, {1});
  std::string message = testing::error_of([&] { world->communicator()->all_reduce(x, y, ReduceOp::kSum, {.tag = "after"}); });
  std::fprintf(stderr, "%s\n", message.c_str());
  const bool named = message.find("'late'") != std::string::npos && message.find("aborted") != std::string::npos;
  std::_Exit(named ? 0 : 1);  // no teardown of an aborted world
}

TEST_F(NcclOnGpu, ACallTheStreamDoesNotReachInTimeAbortsTheWorldNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_a_call_the_stream_does_not_reach_in_time(), ::testing::ExitedWithCode(0), "did not finish within");
}

// LeNet, 4 steps of momentum SGD on seeded random images: the GPU's losses
// against the CPU's, alone and as an NCCL world of one (whose step averages
// its gradients through NCCL's AllReduce). Every step's batch is the same 16
// examples (shuffled), so the losses must fall: with 64, each step's loss
// is of other random images, and on the CPU it rose from 2.29 to 2.42.
TEST_F(NcclOnGpu, LeNetTrainsOnTheGpuLikeTheCpu) {
  const int64_t examples = 16;
  Tensor images = testing::make_tensor(DType::kFloat32,
                                       testing::random_values(DType::kFloat32, examples * 28 * 28, 11, 0.0, 1.0),
                                       {examples, 1, 28, 28});
  Tensor labels(DType::kInt64, {examples});
  for (int64_t i = 0; i < examples; ++i) labels.data<int64_t>()[i] = (i * 7) % 10;
  models::ClassifierTraining options;
  options.model = "lenet";
  options.batch = 16;
  options.steps = 4;
  options.optimizer.kind = OptimizerKind::kMomentum;
  options.lr = 0.05;
  options.log = nullptr;
  const models::ClassifierTrainingResult cpu = models::train_classifier(options, images, labels);
  options.device = Device::cuda(0);
  const models::ClassifierTrainingResult gpu = models::train_classifier(options, images, labels);
  options.world = make_nccl_world(world_of_one(testing::unused_port()), {.timeout = 60s});
  const models::ClassifierTrainingResult nccl = models::train_classifier(options, images, labels);
  ASSERT_EQ(cpu.losses.size(), 4u);
  ASSERT_EQ(gpu.losses.size(), 4u);
  ASSERT_EQ(nccl.losses.size(), 4u);
  for (size_t step = 0; step < cpu.losses.size(); ++step) {
    EXPECT_NEAR(gpu.losses[step], cpu.losses[step], 1e-4 * std::abs(cpu.losses[step])) << "step " << step;
    EXPECT_NEAR(nccl.losses[step], cpu.losses[step], 1e-4 * std::abs(cpu.losses[step])) << "step " << step;
  }
  EXPECT_LT(cpu.losses.back(), cpu.losses.front());  // it learns
}

}  // namespace
}  // namespace weir
