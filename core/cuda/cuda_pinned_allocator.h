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
//
// Pinning and unpinning run with cuda:`device_index` current (the caller's
// device is restored after): the CUDA runtime creates the current device's
// context on a thread's first call, and a thread that has touched no GPU
// yet (a data loader's worker) would otherwise create one on device 0, in
// every process of a multi-GPU job.
#pragma once

#include "core/allocator.h"

namespace weir {

class CudaPinnedAllocator final : public Allocator {
 public:
  explicit CudaPinnedAllocator(int device_index = 0) : device_index_(device_index) {}

  void* allocate(size_t bytes, size_t alignment = kTensorAlignment) override;
  void deallocate(void* ptr, size_t bytes) override;
  Device device() const override { return Device::cpu(); }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  void reset_peak() override { counters_.reset_peak(); }

 private:
  int device_index_;
  AllocationCounters counters_;
};

}  // namespace weir
