#include "ops/dnnl_scratchpad.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

namespace weir {

void* thread_scratchpad_data(size_t bytes, int slot) {
  struct Buffer {
    std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
    size_t bytes = 0;
  };
  thread_local Buffer buffers[kThreadScratchSlots];
  if (slot < 0 || slot >= kThreadScratchSlots) throw std::out_of_range("thread scratch slot " + std::to_string(slot));
  Buffer& buffer = buffers[slot];
  if (bytes > buffer.bytes) {
    constexpr size_t kAlignment = 64;  // oneDNN's own scratchpads are page- or cache-line-aligned
    constexpr size_t kHugePage = size_t{2} << 20;
    size_t rounded = std::max(bytes, buffer.bytes + buffer.bytes / 2);
    const bool huge = rounded >= kHugePage;
    rounded = huge ? (rounded + kHugePage - 1) / kHugePage * kHugePage : (rounded + kAlignment - 1) / kAlignment * kAlignment;
    buffer.data.reset();
    void* data = nullptr;
    if (::posix_memalign(&data, huge ? kHugePage : kAlignment, rounded) != 0) data = nullptr;
    if (data == nullptr) {
      buffer.bytes = 0;
      throw std::bad_alloc();
    }
    if (huge) ::madvise(data, rounded, MADV_HUGEPAGE);  // advice only: ignored where THP is off
    buffer.data.reset(data);
    buffer.bytes = rounded;
  }
  return buffer.data.get();
}

dnnl::memory thread_scratchpad(const dnnl::memory::desc& desc, const dnnl::engine& engine) {
  const size_t wanted = desc.get_size();
  return dnnl::memory(desc, engine, wanted > 0 ? thread_scratchpad_data(wanted) : nullptr);
}

}  // namespace weir
