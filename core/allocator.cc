#include "core/allocator.h"

#include <sys/mman.h>

#include <algorithm>
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
  // Large buffers (weights, activation arenas) on transparent huge pages:
  // first touching 100 MB of 4 KiB pages costs 25,600 page faults, which
  // dominated loading ResNet-50 (and a VM makes each fault dearer). Aligned
  // to 2 MiB and advised, the kernel backs them with 2 MiB pages where it can.
  constexpr size_t kHugePage = size_t{2} << 20;
  const bool huge = bytes >= kHugePage;
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  if (rounded < bytes) {
    throw Error(ErrorKind::kOutOfMemory, "allocation of " + std::to_string(bytes) + " bytes overflows");
  }
  void* ptr = nullptr;
  // posix_memalign: any size (aligned_alloc wants a multiple of the alignment,
  // which would round a 2.3 MB weight up to 4 MB for the huge-page alignment).
  if (::posix_memalign(&ptr, huge ? std::max(alignment, kHugePage) : alignment, rounded) != 0) ptr = nullptr;
  if (ptr == nullptr) {
    throw Error(ErrorKind::kOutOfMemory, "could not allocate " + std::to_string(bytes) +
                                             " bytes on " + device_.to_string());
  }
  if (huge) ::madvise(ptr, rounded, MADV_HUGEPAGE);  // advice only: ignored where THP is off
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
