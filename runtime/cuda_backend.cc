#include "runtime/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_pinned_allocator.h"
#include "core/error.h"
#include "runtime/caching_allocator.h"

namespace weir {

namespace {

std::string cuda_message(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

// The calling thread's current device is per thread: every entry point that
// talks to the device makes its own current first.
void make_current(const Device& device, const std::string& where) {
  cudaError_t status = cudaSetDevice(device.index);
  if (status != cudaSuccess) throw Error(ErrorKind::kDevice, where + ": cudaSetDevice failed: " + cuda_message(status));
}

// The events a stream records, kept for reuse: creating and destroying a
// cudaEvent_t per launch costs microseconds of driver work on every step.
// An event goes back to the pool when the last holder of its CudaEvent lets
// go; recording it again is then safe (a stream that waited on it captured
// its state when it asked).
class EventPool {
 public:
  EventPool() = default;
  ~EventPool() {
    for (cudaEvent_t event : free_) cudaEventDestroy(event);
  }
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // A free event, or a new one (nullptr with `status` set when CUDA refuses).
  cudaEvent_t take(cudaError_t& status) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        cudaEvent_t event = free_.back();
        free_.pop_back();
        status = cudaSuccess;
        return event;
      }
    }
    cudaEvent_t event = nullptr;
    status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    return status == cudaSuccess ? event : nullptr;
  }
  void give_back(cudaEvent_t event) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(event);
  }

 private:
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

class CudaEvent final : public Event {
 public:
  // `where` names the device and stream the event was recorded on ("cuda:0
  // stream compute"); the event returns to `pool` when this object dies.
  CudaEvent(std::string where, cudaEvent_t event, std::shared_ptr<EventPool> pool)
      : where_(std::move(where)), event_(event), pool_(std::move(pool)) {}
  ~CudaEvent() override { pool_->give_back(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t handle() const { return event_; }

  // A failed event counts as done (Event::query's contract); synchronize() reports the failure.
  bool query() const override {
    if (cudaEventQuery(event_) != cudaErrorNotReady) return true;
    cuda_clear_not_ready();
    return false;
  }

  void synchronize(std::chrono::milliseconds timeout, const std::string& what) const override {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout;
    // Spin (yielding) for the first 200 us: a kernel's event is usually
    // done within tens of microseconds, and any sleep, however short it is
    // asked to be, lasts the kernel's timer slack (about 50 us on Linux),
    // which a step would pay every time. Then sleep, in steps growing to
    // 1 ms, so a long wait costs the host little.
    const auto spin_until = start + std::chrono::microseconds(200);
    auto pause = std::chrono::microseconds(50);
    while (true) {
      cudaError_t status = cudaEventQuery(event_);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) {
        cudaGetLastError();  // a non-sticky error must not leak into the next call on this thread
        throw Error(ErrorKind::kDevice, what + " on " + where_ + " failed: " + cuda_message(status));
      }
      cuda_clear_not_ready();
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
        throw Error(ErrorKind::kDevice, what + " on " + where_ + " did not finish within " +
                                            std::to_string(waited.count()) + " ms");
      }
      if (now < spin_until) {
        std::this_thread::yield();
        continue;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
    }
  }

 private:
  std::string where_;
  cudaEvent_t event_;
  std::shared_ptr<EventPool> pool_;
};

class CudaStream final : public Stream {
 public:
  CudaStream(Device device, StreamId id, std::chrono::milliseconds wait_timeout)
      : device_(device), id_(id), where_(device.to_string() + " stream " + id.to_string()), wait_timeout_(wait_timeout) {
    make_current(device_, where_);
    // Non-blocking: the legacy default stream (which a library may use
    // behind our back) does not serialize with it.
    cudaError_t status = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (status != cudaSuccess) fail("cudaStreamCreateWithFlags", status);
  }
  ~CudaStream() override {
    // Returns at once; CUDA releases the stream once its work is done. The
    // destroying thread keeps its device (nothing is thrown from here).
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    cudaSetDevice(device_.index);
    cudaStreamDestroy(stream_);
    if (previous >= 0 && previous != device_.index) cudaSetDevice(previous);
    cudaGetLastError();
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  Device device() const override { return device_; }
  StreamId id() const override { return id_; }
  void* native_handle() const override { return stream_; }
  bool runs_ahead() const override { return true; }
  cudaStream_t handle() const { return stream_; }
  const std::string& where() const { return where_; }

  std::shared_ptr<Event> launch(std::function<void()> work) override {
    make_current(device_, where_);
    try {
      work();
      // A kernel launch with a bad configuration reports here, on this thread.
      cudaError_t status = cudaGetLastError();
      if (status != cudaSuccess) fail("a kernel launch", status);
    } catch (...) {
      std::exception_ptr error = std::current_exception();
      // Work enqueued before the failure may still use memory the caller
      // frees as the error unwinds: let it finish first (bounded, and a
      // failure of that wait only adds to the error already in hand).
      try {
        record()->synchronize(wait_timeout_, "the work enqueued before a failed launch");
      } catch (...) {
      }
      return completed_event(error);
    }
    return record();
  }

  std::shared_ptr<Event> record() override {
    CudaDeviceScope current(device_.index, where_);
    cudaError_t status = cudaSuccess;
    cudaEvent_t event = events_->take(status);
    if (event == nullptr) fail("cudaEventCreateWithFlags", status);
    auto recorded = std::make_shared<CudaEvent>(where_, event, events_);  // owns it from here on
    status = cudaEventRecord(event, stream_);
    if (status != cudaSuccess) fail("cudaEventRecord", status);
    return recorded;
  }

  void wait(std::shared_ptr<Event> event) override {
    if (!event) return;
    if (const auto* device_event = dynamic_cast<const CudaEvent*>(event.get())) {
      // Enqueued: the device waits, the host does not. Works across devices.
      CudaDeviceScope current(device_.index, where_);
      cudaError_t status = cudaStreamWaitEvent(stream_, device_event->handle(), 0);
      if (status != cudaSuccess) fail("cudaStreamWaitEvent", status);
      return;
    }
    // A host event (a CPU backend's): the device cannot wait on it, so the
    // caller does, before it enqueues anything more.
    event->synchronize(wait_timeout_, "an event " + where_ + " waits on");
  }

  [[noreturn]] void fail(const std::string& call, cudaError_t status) const {
    cudaGetLastError();
    throw Error(ErrorKind::kDevice, where_ + ": " + call + " failed: " + cuda_message(status));
  }

 private:
  Device device_;
  StreamId id_;
  std::string where_;
  std::chrono::milliseconds wait_timeout_;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<EventPool> events_ = std::make_shared<EventPool>();  // outlives the stream while its events live
};

// The process's pinned host memory for cuda:`index`, cached (pinning costs
// a system call and page-table work per block). The memory is portable
// (every device may copy from it); it is pinned with that device current,
// so a thread that has touched no GPU (a data loader's worker) creates no
// context on device 0. Never destroyed: tensors handed out in it may
// outlive static destruction.
Allocator& pinned_host_memory(int index) {
  struct Pinned {
    std::unique_ptr<CudaPinnedAllocator> memory;
    std::unique_ptr<CachingAllocator> cache;
  };
  static auto* by_device = new std::map<int, Pinned>();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  Pinned& pinned = (*by_device)[index];
  if (!pinned.cache) {
    pinned.memory = std::make_unique<CudaPinnedAllocator>(index);
    pinned.cache = std::make_unique<CachingAllocator>(*pinned.memory);
  }
  return *pinned.cache;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(Device device, Allocator& allocator, std::chrono::milliseconds wait_timeout)
      : device_(device), allocator_(allocator), wait_timeout_(wait_timeout) {
    if (device.type != DeviceType::kCuda) {
      throw Error(ErrorKind::kInvalidArgument, "the CUDA backend cannot serve device " + device.to_string());
    }
    if (allocator.device() != device) {
      throw Error(ErrorKind::kInvalidArgument, "the CUDA backend of " + device.to_string() +
                                                   " was given memory of " + allocator.device().to_string());
    }
    require_cuda_device(device);
  }

  Device device() const override { return device_; }
  Allocator& allocator() override { return allocator_; }
  Allocator& host_allocator() override { return pinned_host_memory(device_.index); }

  Stream& stream(StreamId id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<CudaStream>& stream = streams_[id];
    if (!stream) stream = std::make_unique<CudaStream>(device_, id, wait_timeout_);
    return *stream;
  }

  std::shared_ptr<Event> copy(const Tensor& source, Tensor& destination, Stream& stream) override {
    if (source.dtype() != destination.dtype() || source.num_elements() != destination.num_elements()) {
      throw Error(ErrorKind::kInvalidArgument, "copy on " + device_.to_string() + ": source " + source.type_string() +
                                                   " and destination " + destination.type_string() + " differ");
    }
    const bool from_device = on_this_device(source, "copy from");
    const bool to_device = on_this_device(destination, "copy into");
    CudaStream& cuda = own_stream(stream);
    if (source.nbytes() == 0 || source.raw_data() == destination.raw_data()) return cuda.record();
    cudaMemcpyKind kind = from_device ? (to_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                      : (to_device ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
    make_current(device_, cuda.where());
    cudaError_t status = cudaMemcpyAsync(destination.raw_data(), source.raw_data(), source.nbytes(), kind, cuda.handle());
    if (status != cudaSuccess) cuda.fail("cudaMemcpyAsync of " + std::to_string(source.nbytes()) + " bytes", status);
    return cuda.record();
  }

  std::shared_ptr<Event> fill_zero(Tensor& tensor, Stream& stream) override {
    if (tensor.defined() && tensor.device() != device_) {
      throw Error(ErrorKind::kInvalidArgument, "the CUDA backend of " + device_.to_string() +
                                                   " cannot fill a tensor on " + tensor.device().to_string());
    }
    CudaStream& cuda = own_stream(stream);
    if (tensor.nbytes() == 0) return cuda.record();
    make_current(device_, cuda.where());
    cudaError_t status = cudaMemsetAsync(tensor.raw_data(), 0, tensor.nbytes(), cuda.handle());
    if (status != cudaSuccess) cuda.fail("cudaMemsetAsync of " + std::to_string(tensor.nbytes()) + " bytes", status);
    return cuda.record();
  }

  void synchronize(std::chrono::milliseconds timeout) override {
    std::vector<std::shared_ptr<Event>> events;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [id, stream] : streams_) events.push_back(stream->record());
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (const auto& event : events) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      event->synchronize(std::max(left, std::chrono::milliseconds(0)), "synchronizing " + device_.to_string());
    }
  }

 private:
  // True for a tensor in this device's memory, false for host memory; any
  // other device's tensor is refused (the Backend contract).
  bool on_this_device(const Tensor& tensor, const char* what) const {
    if (tensor.device() == device_) return true;
    if (tensor.device().type == DeviceType::kCpu) return false;
    throw Error(ErrorKind::kInvalidArgument, std::string("the CUDA backend of ") + device_.to_string() + " cannot " +
                                                 what + " a tensor on " + tensor.device().to_string());
  }

  CudaStream& own_stream(Stream& stream) const {
    auto* cuda = dynamic_cast<CudaStream*>(&stream);
    if (cuda == nullptr || cuda->device() != device_) {
      throw Error(ErrorKind::kInvalidArgument, "stream " + stream.id().to_string() + " of " +
                                                   stream.device().to_string() + " is not a CUDA stream of " +
                                                   device_.to_string());
    }
    return *cuda;
  }

  Device device_;
  Allocator& allocator_;
  std::chrono::milliseconds wait_timeout_;
  std::mutex mutex_;
  std::map<StreamId, std::unique_ptr<CudaStream>> streams_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(Device device, Allocator& allocator, std::chrono::milliseconds wait_timeout) {
  return std::make_unique<CudaBackend>(device, allocator, wait_timeout);
}

Allocator& cuda_device_memory(int index) {
  // Deliberately never destroyed: tensors may outlive static destruction order.
  static auto* allocators = new std::map<int, std::unique_ptr<CudaAllocator>>();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<CudaAllocator>& allocator = (*allocators)[index];
  if (!allocator) allocator = std::make_unique<CudaAllocator>(index);  // throws when the device does not exist
  return *allocator;
}

void require_cuda_device(const Device& device) {
  if (device.type != DeviceType::kCuda) {
    throw Error(ErrorKind::kInvalidArgument, device.to_string() + " is not a CUDA device");
  }
  CudaDeviceCount found = query_cuda_device_count();
  if (found.count == 0) {
    throw Error(ErrorKind::kDevice, device.to_string() + ": no CUDA device (cudaGetDeviceCount returned " +
                                        (found.error.empty() ? std::string("0 devices") : found.error) + ")");
  }
  if (device.index < 0 || device.index >= found.count) {
    throw Error(ErrorKind::kDevice, device.to_string() + ": no such CUDA device (" + std::to_string(found.count) +
                                        " found: cuda:0 to cuda:" + std::to_string(found.count - 1) + ")");
  }
}

}  // namespace weir
