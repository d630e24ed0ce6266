// Device scratch memory of one launch of a CUDA OpKernel: a tensor from the
// step's allocator, carved into 256-byte-aligned pieces, that the kernel
// holds while it enqueues its work and lets go when compute() returns.
//
//   cuda::LaunchScratch scratch(ctx, {bytes_a, bytes_b});   // a local of compute()
//   auto* a = scratch.part<double>(0);                       // nullptr for 0 bytes
//   launch_something(..., a, stream);                        // on ctx's stream only
//
// Letting go while the enqueued work still runs is safe because, on a
// device that runs ahead, ctx.allocator() is the allocator of the step's
// stream (CachingAllocator::for_stream): the block it frees is kept for that
// stream alone, so only work enqueued later on the same stream, which runs
// after this launch's, gets it. (Outside a session, a plain CudaAllocator's
// cudaFree waits for the device.) So scratch is a local, never a member: a
// member would be shared by the concurrent runs of one plan and by sessions
// of one plan on different streams, whose device work would then write it
// at once. The price is one cache lookup per launch.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <vector>

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir::cuda {

class LaunchScratch {
 public:
  LaunchScratch() = default;
  LaunchScratch(const KernelContext& ctx, std::initializer_list<size_t> sizes) {
    constexpr size_t kAlign = 256;
    size_t total = 0;
    for (size_t size : sizes) total += (size + kAlign - 1) / kAlign * kAlign;
    if (total > 0) buffer_ = Tensor::uninitialized(DType::kUInt8, {static_cast<int64_t>(total)}, ctx.allocator());
    size_t offset = 0;
    for (size_t size : sizes) {
      parts_.push_back(size == 0 ? nullptr : static_cast<std::byte*>(buffer_.raw_data()) + offset);
      offset += (size + kAlign - 1) / kAlign * kAlign;
    }
  }

  // Piece i (in the order of the sizes asked for), or nullptr if it was 0 bytes.
  template <typename T = void>
  T* part(size_t i) const {
    return static_cast<T*>(parts_.at(i));
  }
  const std::vector<void*>& parts() const { return parts_; }

 private:
  Tensor buffer_;
  std::vector<void*> parts_;
};

}  // namespace weir::cuda
