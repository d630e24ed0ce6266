#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/stream.h"
#include "core/tensor.h"
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

// A stream for the allocator's bookkeeping: record() hands out events the
// test completes by hand, as a device would get past them.
class ManualEvent final : public Event {
 public:
  bool query() const override { return done; }
  void synchronize(std::chrono::milliseconds, const std::string& what) const override {
    ++synchronized;
    if (stuck) throw Error(ErrorKind::kDevice, "timed out waiting for " + what);
  }
  bool done = false;
  bool stuck = false;            // a host wait on it runs out
  mutable int synchronized = 0;  // host waits on it
};

class ManualStream final : public Stream {
 public:
  Device device() const override { return Device::cpu(); }
  StreamId id() const override { return {}; }
  bool runs_ahead() const override { return true; }
  std::shared_ptr<Event> launch(std::function<void()> work) override {
    work();
    return record();
  }
  std::shared_ptr<Event> record() override {
    recorded.push_back(std::make_shared<ManualEvent>());
    recorded.back()->stuck = stuck;
    return recorded.back();
  }
  void wait(std::shared_ptr<Event>) override {}
  std::vector<std::shared_ptr<ManualEvent>> recorded;
  bool stuck = false;  // its queued work does not finish: host waits on what it records run out
};

TEST(CachingAllocatorStreams, AStreamsFreedBlockGoesBackToThatStreamAlone) {
  CpuAllocator host;
  CachingAllocator cache(host);
  ManualStream compute, comm;
  Allocator& on_compute = cache.for_stream(compute);
  Allocator& on_comm = cache.for_stream(comm);
  EXPECT_EQ(&cache.for_stream(compute), &on_compute) << "one face per stream";
  EXPECT_EQ(on_compute.device(), cache.device());
  void* a = on_compute.allocate(1000);
  on_compute.deallocate(a, 1000);
  EXPECT_EQ(cache.cached_bytes(), 1024);
  void* for_comm = on_comm.allocate(1000);
  void* for_anyone = cache.allocate(1000);
  EXPECT_NE(for_comm, a) << "compute's work may still use it";
  EXPECT_NE(for_anyone, a);
  EXPECT_EQ(on_compute.allocate(1000), a) << "compute's later work runs after the old";
  on_compute.deallocate(a, 1000);
  // Idle blocks (freed through the cache itself) go to any stream.
  cache.deallocate(for_anyone, 1000);
  EXPECT_EQ(on_comm.allocate(1000), for_anyone);
  on_comm.deallocate(for_anyone, 1000);
  on_comm.deallocate(for_comm, 1000);
  // Statistics are the cache's, whichever face counts.
  EXPECT_EQ(cache.stats().bytes_in_use, 0);
  EXPECT_EQ(on_comm.stats().num_allocations, cache.stats().num_allocations);
  // A stream that goes away leaves its blocks idle, for anyone.
  cache.forget_stream(compute);
  EXPECT_EQ(cache.allocate(1000), a);
  cache.deallocate(a, 1000);
  cache.release_cached();
  EXPECT_EQ(host.stats().bytes_in_use, 0);
}

TEST(CachingAllocatorStreams, ABlockAnotherStreamUsedWaitsForThatStreamsEvent) {
  CpuAllocator host;
  CachingAllocator cache(host);
  ManualStream compute, comm;
  Allocator& on_compute = cache.for_stream(compute);
  {
    Tensor gradient = Tensor::uninitialized(DType::kFloat32, {256}, on_compute);
    void* block = gradient.raw_data();
    cache.record_use(*gradient.storage(), comm);     // an AllReduce on comm reads it
    cache.record_use(*gradient.storage(), compute);  // its own stream: nothing to wait for
    cache.record_use(*gradient.storage(), comm);     // once is enough
    gradient = Tensor();
    ASSERT_EQ(comm.recorded.size(), 1u) << "the free recorded where comm had got to";
    EXPECT_TRUE(compute.recorded.empty());
    EXPECT_EQ(cache.pending_blocks(), 1);
    EXPECT_EQ(cache.cached_bytes(), 1024);
    void* fresh = on_compute.allocate(1024);
    EXPECT_NE(fresh, block) << "comm may still read it";
    comm.recorded[0]->done = true;
    void* again = on_compute.allocate(1024);
    EXPECT_EQ(again, block) << "comm has got past it";
    EXPECT_EQ(cache.pending_blocks(), 0);
    on_compute.deallocate(fresh, 1024);
    on_compute.deallocate(again, 1024);
  }
  // Idle memory used by a stream (a feed, a parameter) waits the same way.
  Tensor parameter = Tensor::uninitialized(DType::kFloat32, {1000}, cache);
  void* block = parameter.raw_data();
  cache.record_use(*parameter.storage(), compute);
  parameter = Tensor();
  void* fresh = cache.allocate(4000);
  EXPECT_NE(fresh, block);
  compute.recorded.back()->done = true;
  void* again = cache.allocate(4000);
  EXPECT_EQ(again, block);
  cache.deallocate(fresh, 4000);
  cache.deallocate(again, 4000);
  // Memory of another allocator is not this cache's to track.
  Tensor elsewhere = Tensor::uninitialized(DType::kFloat32, {16}, host);
  cache.record_use(*elsewhere.storage(), comm);
  const size_t recorded = comm.recorded.size();
  elsewhere = Tensor();
  EXPECT_EQ(comm.recorded.size(), recorded);
  EXPECT_EQ(cache.stats().bytes_in_use, 0);
}

TEST(CachingAllocatorStreams, UsesOnAForgottenStreamAreDropped) {
  CpuAllocator host;
  CachingAllocator cache(host);
  ManualStream compute, comm;
  Tensor kept = Tensor::uninitialized(DType::kFloat32, {64}, cache.for_stream(compute));
  cache.record_use(*kept.storage(), comm);
  cache.forget_stream(comm);  // its work is done and it goes away
  kept = Tensor();
  EXPECT_TRUE(comm.recorded.empty()) << "nothing is recorded on a stream that is gone";
  EXPECT_EQ(cache.pending_blocks(), 0);
}

// Host memory that refuses to hold more than `limit` bytes at once, as a
// full GPU does.
class LimitedMemory final : public Allocator {
 public:
  explicit LimitedMemory(int64_t limit) : limit_(limit) {}
  void* allocate(size_t bytes, size_t alignment) override {
    if (host_.stats().bytes_in_use + static_cast<int64_t>(bytes) > limit_) {
      throw Error(ErrorKind::kOutOfMemory, "could not allocate " + std::to_string(bytes) + " bytes on the test's device");
    }
    return host_.allocate(bytes, alignment);
  }
  void deallocate(void* ptr, size_t bytes) override { host_.deallocate(ptr, bytes); }
  Device device() const override { return host_.device(); }
  AllocatorStats stats() const override { return host_.stats(); }
  void reset_peak() override { host_.reset_peak(); }

 private:
  CpuAllocator host_;
  int64_t limit_;
};

// The weir::Error `call` throws, or a kInternal "no error".
Error error_from(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorKind::kInternal, "no error");
}

TEST(CachingAllocatorStreams, AnAllocationThatFindsTheDeviceFullGetsBackWhatNoQueuedWorkUses) {
  LimitedMemory device(16384);
  CachingAllocator cache(device);
  ManualStream compute, comm;
  Allocator& on_compute = cache.for_stream(compute);
  Allocator& on_comm = cache.for_stream(comm);
  cache.deallocate(cache.allocate(3000), 3000);                  // idle, 3072
  void* comms = on_comm.allocate(4000);
  on_comm.deallocate(comms, 4000);                               // kept for comm, 4096
  on_compute.deallocate(on_compute.allocate(3500), 3500);        // kept for compute, 3584
  Tensor gradient = Tensor::uninitialized(DType::kFloat32, {512}, on_compute);  // 2048
  cache.record_use(*gradient.storage(), comm);
  gradient = Tensor();  // pending until comm gets past its use
  ASSERT_EQ(comm.recorded.size(), 1u);
  ASSERT_EQ(device.stats().bytes_in_use, 3072 + 4096 + 3584 + 2048);
  ASSERT_EQ(cache.cached_bytes(), 3072 + 4096 + 3584 + 2048);

  // 7680 more do not fit beside the 12800 cached. The first stage is
  // enough: compute gets the idle block, its own once its queued work is
  // done, and the pending one once comm's event completes; comm's own stays
  // (comm's work is not waited for when it need not be).
  const size_t compute_waits = compute.recorded.size();
  void* big = on_compute.allocate(7680);
  ASSERT_NE(big, nullptr);
  ASSERT_EQ(compute.recorded.size(), compute_waits + 1) << "an event recorded on compute";
  EXPECT_EQ(compute.recorded.back()->synchronized, 1) << "and waited for before compute's blocks went back";
  EXPECT_EQ(comm.recorded[0]->synchronized, 1) << "the pending block's event was waited for";
  EXPECT_EQ(comm.recorded.size(), 1u) << "comm's own blocks are not waited for";
  EXPECT_EQ(cache.cached_bytes(), 4096);
  EXPECT_EQ(cache.pending_blocks(), 0);
  EXPECT_EQ(device.stats().bytes_in_use, 4096 + 7680);

  // 16384 need comm's block too. While comm's queued work does not finish,
  // its block stays, and the allocation fails with the device's kind,
  // saying what was given back and what queued work keeps.
  on_compute.deallocate(big, 7680);
  comm.stuck = true;
  const Error refused = error_from([&] { on_compute.allocate(16000); });
  EXPECT_EQ(refused.kind(), ErrorKind::kOutOfMemory) << refused.what();
  EXPECT_NE(refused.message().find("could not allocate 16384 bytes on the test's device (after the cache gave back "
                                   "7680 bytes it held; 4096 more are kept for queued work)"),
            std::string::npos)
      << refused.message();
  ASSERT_EQ(comm.recorded.size(), 2u) << "the second stage recorded an event on comm";
  EXPECT_EQ(comm.recorded[1]->synchronized, 1);
  EXPECT_EQ(cache.cached_bytes(), 4096);
  EXPECT_EQ(on_comm.allocate(4000), comms) << "still kept for comm";
  on_comm.deallocate(comms, 4000);

  // Once comm's work finishes, the second stage gives its block back.
  comm.stuck = false;
  void* whole = on_compute.allocate(16000);
  ASSERT_NE(whole, nullptr);
  ASSERT_EQ(comm.recorded.size(), 3u);
  EXPECT_EQ(comm.recorded[2]->synchronized, 1) << "comm's queued work was waited for";
  EXPECT_EQ(cache.cached_bytes(), 0);
  EXPECT_EQ(device.stats().bytes_in_use, 16384);

  // Nothing to give back: the device's own error, unchanged.
  const Error plain = error_from([&] { cache.allocate(1000); });
  EXPECT_EQ(plain.message(), "could not allocate 1024 bytes on the test's device");
  on_compute.deallocate(whole, 16000);
  cache.release_cached();
  EXPECT_EQ(device.stats().bytes_in_use, 0);
}

}  // namespace
}  // namespace weir
