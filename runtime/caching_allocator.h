// CachingAllocator — keeps freed blocks for reuse instead of returning them
// to the system, so a plan that runs many times stops allocating after its
// first run.
//
//   weir::CpuAllocator host(weir::Device::cpu(1));
//   weir::CachingAllocator cache(host);
//   void* p = cache.allocate(1000);      // a fresh 1024-byte block
//   cache.deallocate(p, 1000);           // kept
//   cache.allocate(900);                 // the same block again: a cache hit
//   cache.stats().bytes_in_use;          // what callers hold
//   cache.cached_bytes();                // what is kept for reuse
//   cache.release_cached();              // hand the kept blocks back
//
// Sizes round up to a bin: multiples of 512 bytes up to 1 MiB, above that
// multiples of 1/8 of the next power of two, so a block is reused by any
// request that rounds to the same bin. stats() counts what callers hold
// (bytes_in_use, peak_bytes, live_allocations) and every allocate() call
// (num_allocations); cached_bytes(), cache_hits() and system_allocations()
// say how well the cache works. Thread-safe.
//
// Streams. Work a stream runs later than its launch (a GPU's) may still
// read or write a block after the host has freed it, so a block must not go
// to work that could run first. for_stream(s) is the allocator of the work
// launched on stream s: a block it frees is kept for s alone, where the
// next allocation for s takes it at once, safely, because s runs what is
// launched on it in order. A block used by work on any other stream is
// marked with record_use(); when freed, it is held until events recorded on
// those streams at that moment have completed (pending_blocks() counts
// them). Blocks freed through the cache itself are idle and go to anyone.
// This is the scheme of PyTorch's CUDA caching allocator (record_stream).
//
// Out of memory. When the backing allocator refuses a block (kOutOfMemory),
// the cache gives back what it holds and asks again, in two stages, the
// least disruptive first. First its idle blocks, the blocks kept for the
// asking stream once an event recorded on it has completed (a host wait),
// and pending blocks whose events complete. If that was not enough, the
// blocks kept for every other stream too, each once an event recorded on
// that stream has completed. The waits of a stage take at most
// kOutOfMemoryWait together; a block whose wait fails stays cached. A
// refusal after what was given back fails with the first's kind, saying
// how many bytes were given back and how many stay kept for queued work.
//
//   weir::Allocator& compute = cache.for_stream(compute_stream);
//   weir::Tensor y = weir::Tensor::uninitialized(dtype, sizes, compute);
//   cache.record_use(*y.storage(), comm_stream);   // an AllReduce reads y
//   y = weir::Tensor();                            // held until comm passes this point
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/stream.h"
#include "core/tensor.h"

namespace weir {

class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(Allocator& backing);
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(size_t bytes, size_t alignment = kTensorAlignment) override;
  void deallocate(void* ptr, size_t bytes) override;
  Device device() const override { return backing_.device(); }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  void reset_peak() override { counters_.reset_peak(); }

  int64_t cached_bytes() const;
  int64_t cache_hits() const;
  int64_t system_allocations() const;
  // Returns every idle cached block to the backing allocator (blocks kept
  // for a stream and pending ones too: call it with no stream work in flight).
  void release_cached();

  // The allocator of work launched on `stream` (see above); owned by this
  // cache and as long-lived. Asking again for the same stream gives the same.
  Allocator& for_stream(Stream& stream);
  // Work on `stream` uses `storage` (memory of this cache; other memory is
  // ignored), which was allocated for another stream or for none: when freed,
  // the block waits for what `stream` has been given by then.
  void record_use(const Storage& storage, Stream& stream);
  // `stream` is going away with all its work done: the blocks kept for it
  // become idle, and uses recorded on it are forgotten.
  void forget_stream(const Stream& stream);
  // Freed blocks still waiting for another stream's work.
  int64_t pending_blocks() const;

  // The bin a request of `bytes` rounds up to.
  static size_t bin_size(size_t bytes);

  // How long one stage of giving back after the device was found full
  // waits, all together, for the queued work of the streams it asks.
  static constexpr std::chrono::milliseconds kOutOfMemoryWait{std::chrono::minutes(1)};

 private:
  class StreamAllocator;
  struct Pending {
    const Stream* owner = nullptr;  // the stream it is kept for; nullptr: anyone's
    size_t bin = 0;
    void* block = nullptr;
    std::vector<std::shared_ptr<Event>> events;  // of the other streams that used it
  };
  using FreeKey = std::pair<const Stream*, size_t>;  // (stream kept for, or nullptr; bin)

  void* take(Stream* owner, size_t bytes, size_t alignment);
  // After the backing allocator refused a block of `bin` bytes for memory:
  // gives back what the cache holds in two stages (see "Out of memory"),
  // asking again after each that gave something back. nullptr: nothing was
  // given back; throws kOutOfMemory, saying what was, when it was not enough.
  void* allocate_after_giving_back(Stream* owner, size_t bin);
  // One stage: the idle blocks, those kept for `owner` (or, with
  // `every_stream`, for any stream) once an event recorded on their stream
  // has completed, and pending ones whose events complete. Returns the bytes
  // given back.
  int64_t give_back_for_retry(Stream* owner, bool every_stream);
  // `stream` while a face of this cache works for it, else nullptr (with mutex_ held).
  Stream* registered_locked(const Stream* stream) const;
  void give_back(const Stream* owner, void* ptr, size_t bytes);
  void* pop_free(const Stream* owner, size_t bin);  // with mutex_ held
  bool collect_pending();                           // with mutex_ held; true when a block became free

  Allocator& backing_;
  AllocationCounters counters_;
  mutable std::mutex mutex_;
  std::map<FreeKey, std::vector<void*>> free_;
  std::unordered_map<void*, std::vector<Stream*>> uses_;  // by block: the other streams that used it
  std::vector<Pending> pending_;
  std::map<const Stream*, std::unique_ptr<StreamAllocator>> stream_allocators_;
  int64_t cached_bytes_ = 0;
  int64_t cache_hits_ = 0;
  int64_t system_allocations_ = 0;
};

// The process's caching allocator for `device`, created on first use and
// never destroyed, so tensors a session returns stay valid after the session
// is gone. Sessions allocate through these, which makes the statistics per
// device, process-wide. A host device ("cpu:N") caches a CpuAllocator of its
// own; any other device caches `device_memory`, that device's raw memory (a
// CUDA backend's cudaMalloc allocator), which must be given on first use and
// must outlive the process's use of it. Throws weir::Error(kUnsupported)
// naming the device when a device other than the host's has none, and
// kInvalidArgument when a later call names other memory for it.
CachingAllocator& device_caching_allocator(const Device& device, Allocator* device_memory = nullptr);

}  // namespace weir
