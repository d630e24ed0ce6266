#include "ops/dnnl_scratchpad.h"

#include <cstdlib>
#include <memory>
#include <new>

namespace weir {

dnnl::memory thread_scratchpad(const dnnl::memory::desc& desc, const dnnl::engine& engine) {
  struct Buffer {
    std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
    size_t bytes = 0;
  };
  thread_local Buffer buffer;
  const size_t wanted = desc.get_size();
  if (wanted > buffer.bytes) {
    constexpr size_t kAlignment = 64;  // oneDNN's own scratchpads are page- or cache-line-aligned
    const size_t rounded = (wanted + kAlignment - 1) / kAlignment * kAlignment;
    buffer.data.reset(std::aligned_alloc(kAlignment, rounded));
    if (!buffer.data) {
      buffer.bytes = 0;
      throw std::bad_alloc();
    }
    buffer.bytes = rounded;
  }
  return dnnl::memory(desc, engine, wanted > 0 ? buffer.data.get() : nullptr);
}

}  // namespace weir
