// The CUDA backend (runtime/cuda_backend.h): streams created once per id,
// events that follow device work (query, synchronize with a timeout that
// names the device and stream, waits between streams), copies in every
// direction, fill_zero, synchronize(timeout), and errors of launched work.
// Skips without a GPU.
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda/cuda_device.h"
#include "core/error.h"
#include "runtime/cpu_backend.h"
#include "runtime/cuda_backend.h"
#include "tests/cuda/device_test_kernels.h"

namespace weir {
namespace {

using std::chrono::milliseconds;

class CudaStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device available";
    backend_ = make_cuda_backend(Device::cuda(0), cuda_device_memory(0));
  }

  static cudaStream_t handle(Stream& stream) { return static_cast<cudaStream_t>(stream.native_handle()); }

  // The message of the weir::Error `fn` throws, or "no error".
  template <typename Fn>
  static std::string error_of(Fn&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }

  Tensor random_host(int64_t count, uint32_t seed) {
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> uniform(-5.0f, 5.0f);
    std::vector<float> values(static_cast<size_t>(count));
    for (float& value : values) value = uniform(engine);
    return Tensor::from_vector(values, {count});
  }

  Tensor host_copy(const Tensor& device_tensor) {
    Tensor host = Tensor::uninitialized(device_tensor.dtype(), device_tensor.sizes());
    backend_->copy(device_tensor, host, backend_->stream({StreamKind::kCopy, 0}))->synchronize(milliseconds(10000));
    return host;
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(CudaStreams, EachIdIsOneNonBlockingCudaStreamOfTheDevice) {
  Stream& compute = backend_->stream({StreamKind::kCompute, 0});
  EXPECT_EQ(&backend_->stream({StreamKind::kCompute, 0}), &compute) << "created once";
  Stream& comm = backend_->stream({StreamKind::kCommunication, 1});
  ASSERT_NE(compute.native_handle(), nullptr);
  EXPECT_NE(comm.native_handle(), compute.native_handle());
  EXPECT_EQ(compute.device(), Device::cuda(0));
  EXPECT_EQ(comm.id(), (StreamId{StreamKind::kCommunication, 1}));
  unsigned int flags = 0;
  ASSERT_EQ(cudaStreamGetFlags(handle(compute), &flags), cudaSuccess);
  EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking);
  EXPECT_EQ(backend_->device(), Device::cuda(0));
}

TEST_F(CudaStreams, CopiesGoBetweenHostAndDeviceAndWithinTheDevice) {
  Stream& copy = backend_->stream({StreamKind::kCopy, 0});
  for (int64_t count : {int64_t{1}, int64_t{1031}, int64_t{1} << 20}) {
    Tensor host = random_host(count, static_cast<uint32_t>(count));
    Tensor first = Tensor::uninitialized(DType::kFloat32, {count}, backend_->allocator());
    Tensor second = Tensor::uninitialized(DType::kFloat32, {count}, backend_->allocator());
    EXPECT_EQ(first.device(), Device::cuda(0));
    backend_->copy(host, first, copy);
    backend_->copy(first, second, copy);  // device to device, in stream order after the first
    Tensor back = Tensor::uninitialized(DType::kFloat32, {count});
    std::shared_ptr<Event> done = backend_->copy(second, back, copy);
    done->synchronize(milliseconds(10000));
    EXPECT_TRUE(done->query());
    EXPECT_TRUE(back.bitwise_equal(host)) << count << " elements";
    Tensor host_to_host = Tensor::uninitialized(DType::kFloat32, {count});
    backend_->copy(host, host_to_host, copy)->synchronize(milliseconds(10000));
    EXPECT_TRUE(host_to_host.bitwise_equal(host));
  }
  // Different element counts, and tensors of another device, are refused naming both.
  Tensor small = Tensor::uninitialized(DType::kFloat32, {3}, backend_->allocator());
  EXPECT_NE(error_of([&] { backend_->copy(random_host(4, 1), small, copy); }).find("differ"), std::string::npos);
  static CpuAllocator elsewhere(Device::cuda(7));  // host memory posing as another GPU's
  Tensor foreign = Tensor::uninitialized(DType::kFloat32, {3}, elsewhere);
  EXPECT_NE(error_of([&] { backend_->copy(foreign, small, copy); }).find("cannot copy from a tensor on cuda:7"),
            std::string::npos);
}

TEST_F(CudaStreams, FillZeroClearsInStreamOrder) {
  Stream& compute = backend_->stream({StreamKind::kCompute, 0});
  Tensor host = random_host(4099, 3);
  Tensor device = Tensor::uninitialized(DType::kFloat32, {4099}, backend_->allocator());
  backend_->copy(host, device, compute);
  backend_->fill_zero(device, compute)->synchronize(milliseconds(10000));
  Tensor back = host_copy(device);
  for (int64_t i = 0; i < back.num_elements(); ++i) ASSERT_EQ(back.data<float>()[i], 0.0f) << i;
  // Host tensors are not this backend's to fill.
  Tensor on_host = random_host(4, 4);
  EXPECT_NE(error_of([&] { backend_->fill_zero(on_host, compute); }).find("cannot fill a tensor on cpu:0"), std::string::npos);
}

TEST_F(CudaStreams, EventsFollowTheDeviceWorkAndTimeOutNamingTheStream) {
  Stream& compute = backend_->stream({StreamKind::kCompute, 0});
  Tensor flag = Tensor::uninitialized(DType::kFloat32, {1}, backend_->allocator());
  backend_->fill_zero(flag, compute);
  // launch() returns at once; the event completes when the kernel has run.
  std::shared_ptr<Event> spun = compute.launch(
      [&] { testing::launch_spin_then_write(handle(compute), 300'000'000, flag.data<float>(), 1.0f); });
  EXPECT_FALSE(spun->query()) << "a 300 ms kernel is still running";
  std::string timeout = error_of([&] { spun->synchronize(milliseconds(20), "the spin"); });
  EXPECT_NE(timeout.find("the spin on cuda:0 stream compute did not finish within"), std::string::npos) << timeout;
  std::string whole = error_of([&] { backend_->synchronize(milliseconds(20)); });
  EXPECT_NE(whole.find("synchronizing cuda:0"), std::string::npos) << whole;
  spun->synchronize(milliseconds(10000));
  EXPECT_TRUE(spun->query());
  EXPECT_EQ(host_copy(flag).data<float>()[0], 1.0f);
  backend_->synchronize(milliseconds(10000));
}

TEST_F(CudaStreams, AStreamWaitsForAnotherStreamsEventOnTheDevice) {
  Stream& compute = backend_->stream({StreamKind::kCompute, 0});
  Stream& copy = backend_->stream({StreamKind::kCopy, 0});
  Tensor flag = Tensor::uninitialized(DType::kFloat32, {1}, backend_->allocator());
  backend_->fill_zero(flag, compute);
  std::shared_ptr<Event> written = compute.launch(
      [&] { testing::launch_spin_then_write(handle(compute), 100'000'000, flag.data<float>(), 42.0f); });
  copy.wait(written);  // enqueued: the host does not block here
  Tensor back = Tensor::uninitialized(DType::kFloat32, {1});
  back.data<float>()[0] = -1.0f;
  std::shared_ptr<Event> copied = backend_->copy(flag, back, copy);
  copied->synchronize(milliseconds(10000));
  EXPECT_EQ(back.data<float>()[0], 42.0f) << "the copy ran after the kernel it waited for";
  // A host event (another backend's) is waited for by the caller.
  std::unique_ptr<Backend> cpu = make_cpu_backend(Device::cpu(), cpu_allocator());
  copy.wait(cpu->stream({StreamKind::kCompute, 0}).launch([] {}));
  copy.wait(nullptr);
}

TEST_F(CudaStreams, FailuresOfLaunchedWorkReachTheEvent) {
  Stream& compute = backend_->stream({StreamKind::kCompute, 0});
  std::shared_ptr<Event> thrown = compute.launch([] { throw Error(ErrorKind::kShape, "the kernel refused its input"); });
  EXPECT_NE(error_of([&] { thrown->synchronize(milliseconds(1000)); }).find("the kernel refused its input"), std::string::npos);
  // A launch with more threads than a block may have fails at the launch, named by the stream.
  std::shared_ptr<Event> bad = compute.launch([&] { testing::launch_spin_then_write(handle(compute), 0, nullptr, 0.0f, 4096); });
  std::string message = error_of([&] { bad->synchronize(milliseconds(1000)); });
  EXPECT_NE(message.find("cuda:0 stream compute: a kernel launch failed"), std::string::npos) << message;
  // The stream still works afterwards.
  compute.launch([&] { testing::launch_spin_then_write(handle(compute), 1000, nullptr, 0.0f); })->synchronize(milliseconds(10000));
}

TEST_F(CudaStreams, StreamsOfOtherBackendsAreRefused) {
  std::unique_ptr<Backend> cpu = make_cpu_backend(Device::cpu(), cpu_allocator());
  Tensor device = Tensor::uninitialized(DType::kFloat32, {4}, backend_->allocator());
  std::string message = error_of([&] { backend_->fill_zero(device, cpu->stream({StreamKind::kCompute, 0})); });
  EXPECT_NE(message.find("is not a CUDA stream of cuda:0"), std::string::npos) << message;
}

TEST_F(CudaStreams, MissingDevicesAreNamed) {
  std::string message = error_of([] { require_cuda_device(Device::cuda(cuda_device_count())); });
  EXPECT_NE(message.find("no such CUDA device"), std::string::npos) << message;
}

}  // namespace
}  // namespace weir
