// A fake GPU for tests: host memory, and streams that behave as CUDA's do.
// launch() runs its function at once on the caller, as a CUDA kernel's
// compute() runs on the host; what that function enqueues through
// RunAheadStream::enqueue ("device work") runs later, in order, on the
// stream's own thread. Events follow the device work, and runs_ahead() is
// true, so the executor does not wait for each step. A kernel of this
// device finds its stream through native_handle():
//
//   auto* stream = static_cast<testing::RunAheadStream*>(ctx.stream()->native_handle());
//   float* out = y.data<float>();   // raw pointers, as a GPU kernel's arguments are
//   stream->enqueue([out, in, n] { ... });
//
// A runtime that reuses memory while device work may still read it, or
// starts a step on one stream before another stream's device work it reads
// is done, gets wrong numbers on this backend.
#pragma once

#include <atomic>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/allocator.h"
#include "core/backend.h"
#include "core/error.h"
#include "tests/async_host_backend.h"

namespace weir::testing {

class RunAheadStream final : public Stream {
 public:
  RunAheadStream(Device device, StreamId id) : device_work_(device, id) {}

  Device device() const override { return device_work_.device(); }
  StreamId id() const override { return device_work_.id(); }
  bool runs_ahead() const override { return true; }
  void* native_handle() const override { return const_cast<RunAheadStream*>(this); }

  std::shared_ptr<Event> launch(std::function<void()> host_part) override {
    try {
      host_part();
    } catch (...) {
      return completed_event(std::current_exception());
    }
    return record();
  }
  // Follows the device work enqueued so far, and fails once any of it has
  // (a device fault stays, as a CUDA context's sticky errors do).
  std::shared_ptr<Event> record() override {
    return device_work_.launch([this] {
      if (std::exception_ptr fault = fault_of()) std::rethrow_exception(fault);
    });
  }
  void wait(std::shared_ptr<Event> event) override {
    ++waits_;
    device_work_.wait(std::move(event));
  }

  // Device work: runs after everything enqueued on this stream before it;
  // after a fault, nothing more runs.
  void enqueue(std::function<void()> work) {
    device_work_.launch([this, work = std::move(work)] {
      if (fault_of()) return;
      try {
        work();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        fault_ = std::current_exception();
        return;
      }
      ++device_work_done_;
    });
  }
  int64_t device_work_done() const { return device_work_done_; }
  int64_t waits() const { return waits_; }

 private:
  std::exception_ptr fault_of() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fault_;
  }

  mutable std::mutex mutex_;
  std::exception_ptr fault_;
  AsyncHostStream device_work_;
  std::atomic<int64_t> device_work_done_{0};
  std::atomic<int64_t> waits_{0};
};

class RunAheadHostBackend final : public Backend {
 public:
  RunAheadHostBackend(Device device, Allocator& allocator) : device_(device), allocator_(allocator) {}

  Device device() const override { return device_; }
  Allocator& allocator() override { return allocator_; }
  Stream& stream(StreamId id) override { return run_ahead_stream(id); }
  RunAheadStream& run_ahead_stream(StreamId id) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<RunAheadStream>& stream = streams_[id];
    if (!stream) stream = std::make_unique<RunAheadStream>(device_, id);
    return *stream;
  }
  // Streams' waits on other streams' events, over all streams.
  int64_t waits() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t total = 0;
    for (const auto& [id, stream] : streams_) total += stream->waits();
    return total;
  }

  // Enqueued like cudaMemcpyAsync and cudaMemsetAsync: the raw pointers
  // only, so nothing keeps the memory alive but the runtime.
  std::shared_ptr<Event> copy(const Tensor& source, Tensor& destination, Stream& stream) override {
    if (source.dtype() != destination.dtype() || source.num_elements() != destination.num_elements()) {
      throw Error(ErrorKind::kInvalidArgument, "copy: " + source.type_string() + " into " + destination.type_string());
    }
    const void* from = source.raw_data();
    void* to = destination.raw_data();
    const size_t bytes = source.nbytes();
    RunAheadStream& own = own_stream(stream);
    own.enqueue([from, to, bytes] {
      if (bytes > 0) std::memmove(to, from, bytes);
    });
    return own.record();
  }
  std::shared_ptr<Event> fill_zero(Tensor& tensor, Stream& stream) override {
    void* data = tensor.raw_data();
    const size_t bytes = tensor.nbytes();
    RunAheadStream& own = own_stream(stream);
    own.enqueue([data, bytes] {
      if (bytes > 0) std::memset(data, 0, bytes);
    });
    return own.record();
  }
  void synchronize(std::chrono::milliseconds timeout) override {
    std::vector<std::shared_ptr<Event>> events;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [id, stream] : streams_) events.push_back(stream->record());
    }
    for (const auto& event : events) event->synchronize(timeout, "synchronizing " + device_.to_string());
  }

 private:
  RunAheadStream& own_stream(Stream& stream) const {
    auto* own = dynamic_cast<RunAheadStream*>(&stream);
    if (own == nullptr) throw Error(ErrorKind::kInvalidArgument, "not a stream of the run-ahead backend");
    return *own;
  }

  Device device_;
  Allocator& allocator_;
  mutable std::mutex mutex_;
  std::map<StreamId, std::unique_ptr<RunAheadStream>> streams_;
};

// Host memory under a fake device's name (one allocator per device, never
// destroyed: tensors may outlive the test), for SessionOptions::device_memory.
inline Allocator& fake_device_memory(const Device& device) {
  static std::mutex mutex;
  static auto* memory = new std::map<std::string, CpuAllocator*>();
  std::lock_guard<std::mutex> lock(mutex);
  CpuAllocator*& entry = (*memory)[device.to_string()];
  if (entry == nullptr) entry = new CpuAllocator(device);
  return *entry;
}

}  // namespace weir::testing
