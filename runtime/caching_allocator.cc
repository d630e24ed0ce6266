#include "runtime/caching_allocator.h"

#include <bit>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"

namespace weir {

size_t CachingAllocator::bin_size(size_t bytes) {
  constexpr size_t kSmallStep = 512;
  constexpr size_t kSmallLimit = size_t{1} << 20;
  if (bytes <= kSmallLimit) return (bytes + kSmallStep - 1) / kSmallStep * kSmallStep;
  size_t step = std::bit_ceil(bytes) / 8;
  return (bytes + step - 1) / step * step;
}

CachingAllocator::~CachingAllocator() { release_cached(); }

void* CachingAllocator::allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) return nullptr;
  if (alignment > kTensorAlignment) {
    throw Error(ErrorKind::kInvalidArgument,
                "the caching allocator aligns to " + std::to_string(kTensorAlignment) + " bytes, not " +
                    std::to_string(alignment));
  }
  size_t bin = bin_size(bytes);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bin);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= static_cast<int64_t>(bin);
      ++cache_hits_;
    } else {
      ++system_allocations_;
    }
  }
  if (block == nullptr) block = backing_.allocate(bin, kTensorAlignment);
  counters_.on_allocate(bin);
  return block;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  size_t bin = bin_size(bytes);
  counters_.on_deallocate(bin);
  std::lock_guard<std::mutex> lock(mutex_);
  free_[bin].push_back(ptr);
  cached_bytes_ += static_cast<int64_t>(bin);
}

int64_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

int64_t CachingAllocator::cache_hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_hits_;
}

int64_t CachingAllocator::system_allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return system_allocations_;
}

void CachingAllocator::release_cached() {
  std::map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_);
    cached_bytes_ = 0;
  }
  for (auto& [bin, list] : blocks) {
    for (void* block : list) backing_.deallocate(block, bin);
  }
}

CachingAllocator& device_caching_allocator(const Device& device, Allocator* device_memory) {
  struct Entry {
    std::unique_ptr<CpuAllocator> host;  // a host device's own memory
    Allocator* backing = nullptr;
    std::unique_ptr<CachingAllocator> cache;
  };
  // Deliberately never destroyed: tensors may outlive static destruction order.
  static auto* entries = new std::map<std::pair<DeviceType, int>, Entry>();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  Entry& entry = (*entries)[{device.type, device.index}];
  if (!entry.cache) {
    if (device.type == DeviceType::kCpu) {
      entry.host = std::make_unique<CpuAllocator>(device);
      entry.backing = entry.host.get();
    } else if (device_memory != nullptr) {
      entry.backing = device_memory;
    } else {
      throw Error(ErrorKind::kUnsupported, "no memory for " + device.to_string() +
                                               ": a session on it needs SessionOptions::device_memory");
    }
    entry.cache = std::make_unique<CachingAllocator>(*entry.backing);
  } else if (device.type != DeviceType::kCpu && device_memory != nullptr && device_memory != entry.backing) {
    throw Error(ErrorKind::kInvalidArgument, device.to_string() + "'s memory is already cached over another allocator");
  }
  return *entry.cache;
}

}  // namespace weir
