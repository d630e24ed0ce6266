// Device memory statistics: the caching allocator over the process's
// cudaMalloc allocator of cuda:0 (runtime/caching_allocator.h over
// runtime/cuda_backend.h's cuda_device_memory) reports bytes in use, peak,
// cached bytes and how many cudaMalloc calls it made; a reused block costs
// no new cudaMalloc. Pinned host memory is pinned without leaving a
// thread that had no device on one. Skips without a GPU.
#include <gtest/gtest.h>

#include <thread>

#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_pinned_allocator.h"
#include "runtime/caching_allocator.h"
#include "runtime/cuda_backend.h"

namespace weir {
namespace {

class CudaMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device available";
  }
};

TEST_F(CudaMemory, CachingAllocatorCountsUseAndCudaMallocCalls) {
  Allocator& device = cuda_device_memory(0);
  EXPECT_EQ(&cuda_device_memory(0), &device) << "one per device, for the process";
  EXPECT_EQ(device.device(), Device::cuda(0));
  // Other tests of this process may hold device memory: count from here.
  const int64_t mallocs_before = device.stats().num_allocations;
  const int64_t live_before = device.stats().live_allocations;
  {
    CachingAllocator cache(device);
    const size_t big = size_t{3} << 20;  // 3 MiB: a bin of its own size
    void* a = cache.allocate(1000);      // a 1024-byte bin
    void* b = cache.allocate(big);
    EXPECT_EQ(cache.stats().bytes_in_use, static_cast<int64_t>(1024 + big));
    EXPECT_EQ(cache.system_allocations(), 2);
    EXPECT_EQ(device.stats().num_allocations - mallocs_before, 2) << "cudaMalloc calls";
    cache.deallocate(a, 1000);
    cache.deallocate(b, big);
    EXPECT_EQ(cache.stats().bytes_in_use, 0);
    EXPECT_EQ(cache.stats().peak_bytes, static_cast<int64_t>(1024 + big));
    EXPECT_EQ(cache.cached_bytes(), static_cast<int64_t>(1024 + big));

    // The same sizes again: both blocks come from the cache, no cudaMalloc.
    void* again = cache.allocate(900);
    EXPECT_EQ(again, a);
    void* big_again = cache.allocate(big);
    EXPECT_EQ(big_again, b);
    EXPECT_EQ(cache.cache_hits(), 2);
    EXPECT_EQ(cache.system_allocations(), 2);
    EXPECT_EQ(device.stats().num_allocations - mallocs_before, 2);
    EXPECT_EQ(cudaMemset(big_again, 0, big), cudaSuccess) << "a cached block is device memory";
    cache.deallocate(again, 900);
    cache.deallocate(big_again, big);
    cache.release_cached();
    EXPECT_EQ(cache.cached_bytes(), 0);
  }
  EXPECT_EQ(device.stats().live_allocations, live_before) << "released blocks went back to cudaFree";
}

// A fresh thread has no context (the runtime reports device 0 for it);
// choosing a device gives it one. Pinning from a thread that had none (a
// data loader's worker) makes the pinned memory's device current there and
// leaves it so, rather than "restoring" a device 0 it never had.
TEST_F(CudaMemory, PinningFromAThreadWithoutADeviceLeavesItOnThePinnedMemorysDevice) {
  const int last = cuda_device_count() - 1;
  std::thread([last] {
    EXPECT_FALSE(cuda_thread_has_context()) << "a fresh thread";
    CudaPinnedAllocator pinned(last);
    void* block = pinned.allocate(4096);
    ASSERT_NE(block, nullptr);
    cudaPointerAttributes where{};
    EXPECT_EQ(cudaPointerGetAttributes(&where, block), cudaSuccess);
    EXPECT_EQ(where.type, cudaMemoryTypeHost) << "pinned host memory";
    EXPECT_TRUE(cuda_thread_has_context());
    int current = -1;
    EXPECT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, last);
    pinned.deallocate(block, 4096);
  }).join();
  std::thread([] {
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    EXPECT_TRUE(cuda_thread_has_context()) << "a thread that chose a device";
  }).join();
}

TEST_F(CudaMemory, TensorsOnTheDeviceComeFromItsMemory) {
  CachingAllocator cache(cuda_device_memory(0));
  {
    Tensor t = Tensor::uninitialized(DType::kFloat32, {256, 256}, cache);
    EXPECT_EQ(t.device(), Device::cuda(0));
    EXPECT_EQ(cache.stats().live_allocations, 1);
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, t.raw_data()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    EXPECT_EQ(attributes.device, 0);
  }
  EXPECT_EQ(cache.stats().live_allocations, 0);
  EXPECT_EQ(cache.cached_bytes(), 256 * 256 * 4);
}

}  // namespace
}  // namespace weir
