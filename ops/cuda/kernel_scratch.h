// Device scratch memory of one CUDA OpKernel: a member tensor from the
// step's (device) allocator, carved into 256-byte-aligned pieces, grown when
// a run needs more and kept otherwise. A member, not a local, because the
// work enqueued on the stream still reads it after compute() returns; a
// later run of the kernel enqueues on the same stream, after that work.
//
//   std::vector<void*> parts = scratch_.reserve(ctx, {bytes_a, bytes_b});   // nullptr for 0 bytes
#pragma once

#include <cstddef>
#include <initializer_list>
#include <vector>

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir::cuda {

class KernelScratch {
 public:
  std::vector<void*> reserve(KernelContext& ctx, std::initializer_list<size_t> sizes) {
    constexpr size_t kAlign = 256;
    size_t total = 0;
    for (size_t size : sizes) total += (size + kAlign - 1) / kAlign * kAlign;
    if (!buffer_.defined() || buffer_.nbytes() < total) {
      buffer_ = Tensor::uninitialized(DType::kUInt8, {static_cast<int64_t>(total)}, ctx.allocator());
    }
    std::vector<void*> parts;
    auto* base = static_cast<std::byte*>(buffer_.raw_data());
    size_t offset = 0;
    for (size_t size : sizes) {
      parts.push_back(size == 0 ? nullptr : base + offset);
      offset += (size + kAlign - 1) / kAlign * kAlign;
    }
    return parts;
  }

 private:
  Tensor buffer_;
};

}  // namespace weir::cuda
