// CudaAllocator — device memory from cudaMalloc, with the same statistics as
// every Allocator. Each instance serves one device ("cuda:N").
//
//   weir::CudaAllocator gpu(0);
//   weir::Tensor t(weir::DType::kFloat32, {1024}, gpu);   // lives on cuda:0
//   weir::Tensor host = weir::copy_to_host(t);
//   gpu.stats().peak_bytes;
//
// Plain cudaMalloc/cudaFree per call: the caching allocator that avoids their
// cost on every step belongs to runtime/ and builds on this.
#pragma once

#include "core/allocator.h"
#include "core/tensor.h"

namespace weir {

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int device_index);

  void* allocate(size_t bytes, size_t alignment = kTensorAlignment) override;
  void deallocate(void* ptr, size_t bytes) override;
  Device device() const override { return Device::cuda(device_index_); }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  void reset_peak() override { counters_.reset_peak(); }

 private:
  int device_index_;
  AllocationCounters counters_;
};

// Copies between host and device tensors of the same dtype and sizes
// (any direction; synchronous).
void copy_tensor(const Tensor& source, const Tensor& destination);
Tensor copy_to_host(const Tensor& source);
Tensor copy_to_device(const Tensor& source, Allocator& device_allocator);

}  // namespace weir
