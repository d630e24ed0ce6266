#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "runtime/caching_allocator.h"

namespace weir {
namespace {

TEST(CachingAllocator, ReusesFreedBlocksOfTheSameBin) {
  CpuAllocator host(Device::cpu(1));
  CachingAllocator cache(host);
  void* a = cache.allocate(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kTensorAlignment, 0u);
  EXPECT_EQ(cache.stats().bytes_in_use, 1024);
  cache.deallocate(a, 1000);
  EXPECT_EQ(cache.stats().bytes_in_use, 0);
  EXPECT_EQ(cache.cached_bytes(), 1024);
  void* b = cache.allocate(900);  // rounds to the same 1024-byte bin
  EXPECT_EQ(a, b);
  EXPECT_EQ(cache.cache_hits(), 1);
  EXPECT_EQ(cache.system_allocations(), 1);
  void* c = cache.allocate(5000);  // another bin: from the system
  EXPECT_NE(c, b);
  EXPECT_EQ(cache.system_allocations(), 2);
  EXPECT_EQ(cache.stats().peak_bytes, 1024 + 5120);
  EXPECT_EQ(cache.stats().num_allocations, 3);
  cache.deallocate(b, 900);
  cache.deallocate(c, 5000);
  EXPECT_EQ(host.stats().bytes_in_use, 1024 + 5120);  // still held by the cache
  cache.release_cached();
  EXPECT_EQ(host.stats().bytes_in_use, 0);
  EXPECT_EQ(cache.cached_bytes(), 0);
  EXPECT_EQ(cache.device(), Device::cpu(1));
  EXPECT_EQ(cache.allocate(0), nullptr);
}

TEST(CachingAllocator, BinsBoundTheWaste) {
  for (size_t bytes : {1ul, 511ul, 513ul, 1ul << 20, (1ul << 20) + 1, 3ul << 22, (5ul << 24) + 17}) {
    size_t bin = CachingAllocator::bin_size(bytes);
    EXPECT_GE(bin, bytes);
    EXPECT_LE(bin, std::max<size_t>(512, bytes + bytes / 4 + 512)) << bytes;
  }
}

TEST(CachingAllocator, ConcurrentUseKeepsCountsExact) {
  CpuAllocator host;
  CachingAllocator cache(host);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        size_t bytes = 64 * static_cast<size_t>(1 + (i + t) % 7);
        void* p = cache.allocate(bytes);
        std::memset(p, t, bytes);
        cache.deallocate(p, bytes);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(cache.stats().bytes_in_use, 0);
  EXPECT_EQ(cache.stats().num_allocations, 2000);
  EXPECT_LE(cache.system_allocations(), 4);  // every request fits the 512-byte bin
}

}  // namespace
}  // namespace weir
