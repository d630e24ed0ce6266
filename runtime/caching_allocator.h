// CachingAllocator — keeps freed blocks for reuse instead of returning them
// to the system, so a plan that runs many times stops allocating after its
// first run.
//
//   weir::CpuAllocator host(weir::Device::cpu(1));
//   weir::CachingAllocator cache(host);
//   void* p = cache.allocate(1000);      // a fresh 1024-byte block
//   cache.deallocate(p, 1000);           // kept
//   cache.allocate(900);                 // the same block again: a cache hit
//   cache.stats().bytes_in_use;          // what callers hold
//   cache.cached_bytes();                // what is kept for reuse
//   cache.release_cached();              // hand the kept blocks back
//
// Sizes round up to a bin: multiples of 512 bytes up to 1 MiB, above that
// multiples of 1/8 of the next power of two, so a block is reused by any
// request that rounds to the same bin. stats() counts what callers hold
// (bytes_in_use, peak_bytes, live_allocations) and every allocate() call
// (num_allocations); cached_bytes(), cache_hits() and system_allocations()
// say how well the cache works. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/allocator.h"

namespace weir {

class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(Allocator& backing) : backing_(backing) {}
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(size_t bytes, size_t alignment = kTensorAlignment) override;
  void deallocate(void* ptr, size_t bytes) override;
  Device device() const override { return backing_.device(); }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  void reset_peak() override { counters_.reset_peak(); }

  int64_t cached_bytes() const;
  int64_t cache_hits() const;
  int64_t system_allocations() const;
  // Returns every cached block to the backing allocator.
  void release_cached();

  // The bin a request of `bytes` rounds up to.
  static size_t bin_size(size_t bytes);

 private:
  Allocator& backing_;
  AllocationCounters counters_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // bin size -> blocks
  int64_t cached_bytes_ = 0;
  int64_t cache_hits_ = 0;
  int64_t system_allocations_ = 0;
};

// The process's caching allocator for `device`, created on first use and
// never destroyed, so tensors a session returns stay valid after the session
// is gone. Sessions allocate through these, which makes the statistics per
// device, process-wide. A host device ("cpu:N") caches a CpuAllocator of its
// own; any other device caches `device_memory`, that device's raw memory (a
// CUDA backend's cudaMalloc allocator), which must be given on first use and
// must outlive the process's use of it. Throws weir::Error(kUnsupported)
// naming the device when a device other than the host's has none, and
// kInvalidArgument when a later call names other memory for it.
CachingAllocator& device_caching_allocator(const Device& device, Allocator* device_memory = nullptr);

}  // namespace weir
