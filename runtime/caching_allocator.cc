#include "runtime/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
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

// The face of the cache that work on one stream allocates through. Its
// owner is read under the cache's mutex: forget_stream() clears it, and
// for_stream() sets it again when a new stream has the same address.
class CachingAllocator::StreamAllocator final : public Allocator {
 public:
  StreamAllocator(CachingAllocator& cache, Stream* owner) : cache_(cache), owner_(owner) {}

  void* allocate(size_t bytes, size_t alignment) override { return cache_.take(owner(), bytes, alignment); }
  void deallocate(void* ptr, size_t bytes) override { cache_.give_back(owner(), ptr, bytes); }
  Device device() const override { return cache_.device(); }
  AllocatorStats stats() const override { return cache_.stats(); }
  void reset_peak() override { cache_.reset_peak(); }

  const CachingAllocator& cache() const { return cache_; }
  Stream* owner() const {
    std::lock_guard<std::mutex> lock(cache_.mutex_);
    return owner_;
  }
  Stream* owner_locked() const { return owner_; }
  void set_owner_locked(Stream* owner) { owner_ = owner; }

 private:
  CachingAllocator& cache_;
  Stream* owner_;
};

CachingAllocator::CachingAllocator(Allocator& backing) : backing_(backing) {}

CachingAllocator::~CachingAllocator() { release_cached(); }

void* CachingAllocator::allocate(size_t bytes, size_t alignment) { return take(nullptr, bytes, alignment); }

void CachingAllocator::deallocate(void* ptr, size_t bytes) { give_back(nullptr, ptr, bytes); }

void* CachingAllocator::pop_free(const Stream* owner, size_t bin) {
  auto it = free_.find({owner, bin});
  if (it == free_.end() || it->second.empty()) return nullptr;
  void* block = it->second.back();
  it->second.pop_back();
  return block;
}

bool CachingAllocator::collect_pending() {
  bool freed = false;
  for (size_t i = 0; i < pending_.size();) {
    Pending& entry = pending_[i];
    bool done = true;
    for (const auto& event : entry.events) done = done && event->query();
    if (!done) {
      ++i;
      continue;
    }
    free_[{entry.owner, entry.bin}].push_back(entry.block);
    freed = true;
    pending_[i] = std::move(pending_.back());
    pending_.pop_back();
  }
  return freed;
}

void* CachingAllocator::take(Stream* owner, size_t bytes, size_t alignment) {
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
    // A stream's own blocks first (its later work runs after their last
    // use), then idle ones; the pending ones are looked at only on a miss.
    auto find = [&] {
      void* found = owner != nullptr ? pop_free(owner, bin) : nullptr;
      return found != nullptr ? found : pop_free(nullptr, bin);
    };
    block = find();
    if (block == nullptr && !pending_.empty() && collect_pending()) block = find();
    if (block != nullptr) {
      cached_bytes_ -= static_cast<int64_t>(bin);
      ++cache_hits_;
    } else {
      ++system_allocations_;
    }
  }
  if (block == nullptr) {
    try {
      block = backing_.allocate(bin, kTensorAlignment);
    } catch (const Error& refused) {
      if (refused.kind() != ErrorKind::kOutOfMemory) throw;
      block = allocate_after_giving_back(owner, bin);
      if (block == nullptr) throw;  // nothing to give back: the device's own error
    }
  }
  counters_.on_allocate(bin);
  return block;
}

void* CachingAllocator::allocate_after_giving_back(Stream* owner, size_t bin) {
  int64_t given_back = 0;
  std::optional<Error> refused;
  for (bool every_stream : {false, true}) {
    const int64_t now = give_back_for_retry(owner, every_stream);
    if (now == 0) continue;
    given_back += now;
    try {
      return backing_.allocate(bin, kTensorAlignment);
    } catch (const Error& again) {
      if (again.kind() != ErrorKind::kOutOfMemory) throw;
      refused = again;
    }
  }
  if (!refused) return nullptr;
  const int64_t still_cached = cached_bytes();
  throw Error(ErrorKind::kOutOfMemory,
              refused->message() + " (after the cache gave back " + std::to_string(given_back) + " bytes it held" +
                  (still_cached > 0 ? "; " + std::to_string(still_cached) + " more are kept for queued work" : "") +
                  ")");
}

int64_t CachingAllocator::give_back_for_retry(Stream* owner, bool every_stream) {
  struct Kept {  // the blocks kept for one stream: given back once its queued work is done
    Stream* stream = nullptr;  // nullptr: forgotten, its work done
    std::shared_ptr<Event> done;
    std::vector<std::pair<void*, size_t>> blocks;  // (block, bin)
  };
  std::vector<std::pair<void*, size_t>> blocks;  // (block, bin) to give back now
  std::vector<Kept> kept;
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = free_.begin(); it != free_.end();) {
      const auto [kept_for, bin] = it->first;
      if (kept_for == nullptr) {
        for (void* block : it->second) blocks.emplace_back(block, bin);
      } else if (kept_for == owner || every_stream) {
        Stream* stream = registered_locked(kept_for);
        auto of = std::find_if(kept.begin(), kept.end(), [&](const Kept& k) { return k.stream == stream; });
        if (of == kept.end()) of = kept.insert(kept.end(), Kept{stream, {}, {}});
        for (void* block : it->second) of->blocks.emplace_back(block, bin);
      } else {
        ++it;
        continue;
      }
      it = free_.erase(it);
    }
    pending.swap(pending_);
    // Recorded under the mutex: a session forgets its streams (under it)
    // before it destroys them, so every stream named here is alive.
    for (Kept& k : kept) {
      try {
        if (k.stream != nullptr) k.done = k.stream->record();
      } catch (...) {
      }
    }
  }
  // Outside the mutex: these wait on the device, all together at most
  // kOutOfMemoryWait. A wait that fails or runs out keeps its blocks cached.
  const auto deadline = std::chrono::steady_clock::now() + kOutOfMemoryWait;
  auto waited_for = [&](const Event& event, const std::string& what) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    try {
      event.synchronize(std::max(left, std::chrono::milliseconds(0)), what);
      return true;
    } catch (...) {
      return false;
    }
  };
  const std::string queued = "the work queued on a stream before an allocation that found " + device().to_string() +
                             " full";
  std::vector<Kept> still_kept;
  for (Kept& k : kept) {
    if (k.stream == nullptr || (k.done && waited_for(*k.done, queued))) {
      blocks.insert(blocks.end(), k.blocks.begin(), k.blocks.end());
    } else {
      still_kept.push_back(std::move(k));
    }
  }
  std::vector<Pending> still_pending;
  for (Pending& entry : pending) {
    bool done = true;
    for (const auto& event : entry.events) done = done && waited_for(*event, "a stream's use of a freed block");
    if (done) {
      blocks.emplace_back(entry.block, entry.bin);
    } else {
      still_pending.push_back(std::move(entry));
    }
  }
  int64_t given_back = 0;
  for (const auto& [block, bin] : blocks) given_back += static_cast<int64_t>(bin);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Kept& k : still_kept) {
      // Forgotten meanwhile (its work is done): the blocks are idle now.
      const Stream* kept_for = registered_locked(k.stream);
      for (const auto& [block, bin] : k.blocks) free_[{kept_for, bin}].push_back(block);
    }
    for (Pending& entry : still_pending) pending_.push_back(std::move(entry));
    cached_bytes_ -= given_back;
  }
  for (const auto& [block, bin] : blocks) backing_.deallocate(block, bin);
  return given_back;
}

void CachingAllocator::give_back(const Stream* owner, void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  size_t bin = bin_size(bytes);
  counters_.on_deallocate(bin);
  std::vector<Stream*> used_on;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The face read its stream before this lock: forgotten since, it is gone.
    owner = registered_locked(owner);
    auto used = uses_.find(ptr);
    if (used == uses_.end()) {
      free_[{owner, bin}].push_back(ptr);
      cached_bytes_ += static_cast<int64_t>(bin);
      return;
    }
    used_on = std::move(used->second);
    uses_.erase(used);
  }
  // Outside the mutex: recording talks to the device.
  Pending entry{owner, bin, ptr, {}};
  try {
    for (Stream* stream : used_on) entry.events.push_back(stream->record());
  } catch (...) {
    // A stream that cannot record cannot say when its work is done: the
    // block is never reused (the device is failing anyway). A destructor
    // calls this, so nothing may be thrown.
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(std::move(entry));
  cached_bytes_ += static_cast<int64_t>(bin);
}

Stream* CachingAllocator::registered_locked(const Stream* stream) const {
  if (stream == nullptr) return nullptr;
  auto face = stream_allocators_.find(stream);
  if (face == stream_allocators_.end() || face->second->owner_locked() != stream) return nullptr;
  return face->second->owner_locked();
}

Allocator& CachingAllocator::for_stream(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<StreamAllocator>& face = stream_allocators_[&stream];
  if (!face) face = std::make_unique<StreamAllocator>(*this, &stream);
  face->set_owner_locked(&stream);  // again, if an earlier stream at this address was forgotten
  return *face;
}

void CachingAllocator::record_use(const Storage& storage, Stream& stream) {
  const Allocator* from = storage.allocator();
  if (from == nullptr) return;
  const auto* face = from == this ? nullptr : dynamic_cast<const StreamAllocator*>(from);
  if (from != this && (face == nullptr || &face->cache() != this)) return;  // not this cache's memory
  std::lock_guard<std::mutex> lock(mutex_);
  if (face != nullptr && face->owner_locked() == &stream) return;  // its own stream: ordered already
  std::vector<Stream*>& streams = uses_[storage.data()];
  if (std::find(streams.begin(), streams.end(), &stream) == streams.end()) streams.push_back(&stream);
}

void CachingAllocator::forget_stream(const Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = free_.lower_bound({&stream, 0}); it != free_.end() && it->first.first == &stream;) {
    std::vector<void*>& idle = free_[{nullptr, it->first.second}];
    idle.insert(idle.end(), it->second.begin(), it->second.end());
    it = free_.erase(it);
  }
  for (Pending& entry : pending_) {
    if (entry.owner == &stream) entry.owner = nullptr;
  }
  for (auto it = uses_.begin(); it != uses_.end();) {
    std::erase(it->second, &stream);
    it = it->second.empty() ? uses_.erase(it) : std::next(it);
  }
  auto face = stream_allocators_.find(&stream);
  if (face != stream_allocators_.end()) face->second->set_owner_locked(nullptr);
}

int64_t CachingAllocator::pending_blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(pending_.size());
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
  std::map<FreeKey, std::vector<void*>> blocks;
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_);
    pending.swap(pending_);
    cached_bytes_ = 0;
  }
  for (auto& [key, list] : blocks) {
    for (void* block : list) backing_.deallocate(block, key.second);
  }
  for (const Pending& entry : pending) backing_.deallocate(entry.block, entry.bin);
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
