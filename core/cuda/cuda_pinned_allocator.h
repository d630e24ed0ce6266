// CudaPinnedAllocator — page-locked host memory from cudaHostAlloc: host
// tensors that a GPU copies into and out of directly (DMA), asynchronously
// and at full bandwidth, where pageable memory is staged by the driver
// through its own pinned buffers.
//
//   weir::CudaPinnedAllocator pinned;
//   weir::Tensor host(weir::DType::kFloat32, {1024}, pinned);   // host memory (device() is cpu)
//
// Pinning is slow (a system call and page-table work per allocation) and
// takes memory from the OS's pageable pool: keep a caching allocator over it
// (runtime/cuda_backend.h does) rather than pinning per tensor.
#pragma once

#include "core/allocator.h"

namespace weir {

class CudaPinnedAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes, size_t alignment = kTensorAlignment) override;
  void deallocate(void* ptr, size_t bytes) override;
  Device device() const override { return Device::cpu(); }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  void reset_peak() override { counters_.reset_peak(); }

 private:
  AllocationCounters counters_;
};

}  // namespace weir
