#include "core/allocator.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace weir {

void AllocationCounters::on_allocate(size_t bytes) {
  int64_t in_use = bytes_in_use_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
  int64_t peak = peak_bytes_.load();
  while (in_use > peak && !peak_bytes_.compare_exchange_weak(peak, in_use)) {
  }
  num_allocations_.fetch_add(1);
  live_allocations_.fetch_add(1);
}

void AllocationCounters::on_deallocate(size_t bytes) {
  bytes_in_use_.fetch_sub(static_cast<int64_t>(bytes));
  live_allocations_.fetch_sub(1);
}

void AllocationCounters::reset_peak() { peak_bytes_.store(bytes_in_use_.load()); }

AllocatorStats AllocationCounters::snapshot() const {
  AllocatorStats stats;
  stats.bytes_in_use = bytes_in_use_.load();
  stats.peak_bytes = peak_bytes_.load();
  stats.num_allocations = num_allocations_.load();
  stats.live_allocations = live_allocations_.load();
  return stats;
}

void* CpuAllocator::allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) return nullptr;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "alignment " + std::to_string(alignment) + " is not a power of two");
  }
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  // aligned_alloc wants a size that is a multiple of the alignment.
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  if (rounded < bytes) {
    throw Error(ErrorKind::kOutOfMemory, "allocation of " + std::to_string(bytes) + " bytes overflows");
  }
  void* ptr = std::aligned_alloc(alignment, rounded);
  if (ptr == nullptr) {
    throw Error(ErrorKind::kOutOfMemory, "could not allocate " + std::to_string(bytes) +
                                             " bytes on " + device_.to_string());
  }
  counters_.on_allocate(bytes);
  return ptr;
}

void CpuAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  std::free(ptr);
  counters_.on_deallocate(bytes);
}

Allocator& cpu_allocator() {
  static CpuAllocator instance;
  return instance;
}

}  // namespace weir
