// A second backend for tests: host memory, but every stream runs its work
// later, on a thread of its own, and completes it by event, as a GPU's
// streams do. A runtime that takes "launch() returned" for "done" reads
// outputs that are not yet written and fails with this backend; one that
// waits on events gets the CPU backend's results bit for bit.
//
//   SessionOptions options;
//   options.make_backend = [](const Device& d, Allocator& a) { return testing::make_async_host_backend(d, a); };
//   Session session(plan, options);
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/backend.h"
#include "core/error.h"

namespace weir::testing {

class AsyncEvent final : public Event {
 public:
  bool query() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  void synchronize(std::chrono::milliseconds timeout, const std::string& what) const override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, timeout, [&] { return done_; })) {
      throw Error(ErrorKind::kDevice, what + " did not complete within " + std::to_string(timeout.count()) + " ms");
    }
    if (!error_) return;
    // The waiter gets its own copy of a weir::Error. The stored exception is
    // freed by whichever thread drops the event last, through libstdc++'s
    // exception refcount, which ThreadSanitizer cannot see; a waiter reading
    // it after dropping the event would look like a race.
    try {
      std::rethrow_exception(error_);
    } catch (const Error& error) {
      throw Error(error);
    }
  }
  void complete(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      error_ = std::move(error);
    }
    cv_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

class AsyncHostStream final : public Stream {
 public:
  AsyncHostStream(Device device, StreamId id) : device_(device), id_(id), thread_([this] { serve(); }) {}
  ~AsyncHostStream() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  Device device() const override { return device_; }
  StreamId id() const override { return id_; }

  std::shared_ptr<Event> launch(std::function<void()> work) override {
    // From work this stream is running (a kernel zeroing its output through
    // the backend): that work's place in the order is now, so run it here.
    if (std::this_thread::get_id() == thread_.get_id()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++launched_;
      }
      try {
        work();
      } catch (...) {
        return completed_event(std::current_exception());
      }
      return completed_event();
    }
    return enqueue(std::move(work));
  }
  std::shared_ptr<Event> record() override { return enqueue(nullptr); }
  void wait(std::shared_ptr<Event> event) override {
    enqueue([event] { event->synchronize(std::chrono::minutes(1), "an event the stream waits on"); });
  }
  int64_t launched() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return launched_;
  }

 private:
  struct Item {
    std::function<void()> work;
    std::shared_ptr<AsyncEvent> done;
  };

  std::shared_ptr<Event> enqueue(std::function<void()> work) {
    auto done = std::make_shared<AsyncEvent>();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (work) ++launched_;
      queue_.push_back({std::move(work), done});
    }
    cv_.notify_all();
    return done;
  }

  // Drains the queue before stopping, so no event is left incomplete.
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Item item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      // Later than the launch, on purpose: the launching thread has moved on.
      std::this_thread::yield();
      std::exception_ptr error;
      try {
        if (item.work) item.work();
      } catch (...) {
        error = std::current_exception();
      }
      item.done->complete(error);
      lock.lock();
    }
  }

  Device device_;
  StreamId id_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  int64_t launched_ = 0;
  std::thread thread_;
};

class AsyncHostBackend final : public Backend {
 public:
  // `host_memory`: what host_allocator() gives (a GPU's pinned memory, faked); nullptr: the host's own.
  AsyncHostBackend(Device device, Allocator& allocator, Allocator* host_memory = nullptr)
      : device_(device), allocator_(allocator), host_memory_(host_memory) {}

  Device device() const override { return device_; }
  Allocator& allocator() override { return allocator_; }
  Allocator& host_allocator() override { return host_memory_ != nullptr ? *host_memory_ : Backend::host_allocator(); }
  Stream& stream(StreamId id) override { return async_stream(id); }
  AsyncHostStream& async_stream(StreamId id) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<AsyncHostStream>& stream = streams_[id];
    if (!stream) stream = std::make_unique<AsyncHostStream>(device_, id);
    return *stream;
  }
  // Copies and zero-fills asked of the backend.
  int64_t copies() const { return copies_; }
  int64_t fills() const { return fills_; }
  // Work this backend's streams have run (steps, copies, fills), over all streams.
  int64_t launched() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t total = 0;
    for (const auto& [id, stream] : streams_) total += stream->launched();
    return total;
  }

  std::shared_ptr<Event> copy(const Tensor& source, Tensor& destination, Stream& stream) override {
    if (source.dtype() != destination.dtype() || source.num_elements() != destination.num_elements()) {
      throw Error(ErrorKind::kInvalidArgument, "copy: " + source.type_string() + " into " + destination.type_string());
    }
    ++copies_;
    Tensor from = source, to = destination;  // the handles keep the memory alive until the copy has run
    return stream.launch([from, to] {
      if (from.nbytes() > 0) std::memmove(to.raw_data(), from.raw_data(), from.nbytes());
    });
  }
  std::shared_ptr<Event> fill_zero(Tensor& tensor, Stream& stream) override {
    ++fills_;
    Tensor target = tensor;
    return stream.launch([target] {
      if (target.nbytes() > 0) std::memset(target.raw_data(), 0, target.nbytes());
    });
  }
  void synchronize(std::chrono::milliseconds timeout) override {
    std::vector<std::shared_ptr<Event>> events;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [id, stream] : streams_) events.push_back(stream->record());
    }
    for (const auto& event : events) event->synchronize(timeout, device_.to_string() + " synchronize");
  }

 private:
  Device device_;
  Allocator& allocator_;
  Allocator* host_memory_;
  std::atomic<int64_t> copies_{0}, fills_{0};
  mutable std::mutex mutex_;
  std::map<StreamId, std::unique_ptr<AsyncHostStream>> streams_;
};

inline std::unique_ptr<Backend> make_async_host_backend(const Device& device, Allocator& allocator) {
  return std::make_unique<AsyncHostBackend>(device, allocator);
}

}  // namespace weir::testing
