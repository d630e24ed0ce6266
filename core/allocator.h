// Allocator — where tensor memory comes from, with usage statistics.
//
//   weir::Allocator& cpu = weir::cpu_allocator();
//   void* p = cpu.allocate(1024);            // 64-byte aligned
//   cpu.stats().bytes_in_use;                // >= 1024
//   cpu.deallocate(p, 1024);
//   cpu.stats().peak_bytes;                  // highest bytes_in_use seen
//
// Implementations: CpuAllocator (here), CudaAllocator (core/cuda), and later
// caching and arena allocators in runtime/. All are thread-safe. deallocate()
// takes the size that was allocated, so statistics need no lookup table.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/device.h"

namespace weir {

// Every tensor buffer starts on a 64-byte boundary: one cache line, one
// AVX-512 register, and what the compiled plan format aligns weights to.
inline constexpr size_t kTensorAlignment = 64;

struct AllocatorStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes = 0;          // highest bytes_in_use since creation or reset_peak()
  int64_t num_allocations = 0;     // allocate() calls that returned memory, ever
  int64_t live_allocations = 0;    // allocations not yet deallocated
};

// Lock-free counters that implementations share for their statistics.
class AllocationCounters {
 public:
  void on_allocate(size_t bytes);
  void on_deallocate(size_t bytes);
  void reset_peak();
  AllocatorStats snapshot() const;

 private:
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_{0};
  std::atomic<int64_t> num_allocations_{0};
  std::atomic<int64_t> live_allocations_{0};
};

class Allocator {
 public:
  virtual ~Allocator() = default;

  // Returns memory for `bytes` bytes aligned to `alignment` (a power of two),
  // or nullptr when bytes == 0. Throws weir::Error(kOutOfMemory) on failure.
  virtual void* allocate(size_t bytes, size_t alignment = kTensorAlignment) = 0;
  // Frees memory from allocate(); `bytes` must be the size asked for.
  // nullptr is accepted and ignored.
  virtual void deallocate(void* ptr, size_t bytes) = 0;
  virtual Device device() const = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
};

// Host memory from the C runtime's aligned allocation.
class CpuAllocator final : public Allocator {
 public:
  explicit CpuAllocator(Device device = Device::cpu()) : device_(device) {}

  void* allocate(size_t bytes, size_t alignment = kTensorAlignment) override;
  void deallocate(void* ptr, size_t bytes) override;
  Device device() const override { return device_; }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  void reset_peak() override { counters_.reset_peak(); }

 private:
  Device device_;
  AllocationCounters counters_;
};

// The process's default host allocator (device cpu:0).
Allocator& cpu_allocator();

}  // namespace weir
