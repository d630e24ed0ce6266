#include "runtime/cpu_backend.h"

#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"

namespace weir {

namespace {

class HostStream final : public Stream {
 public:
  HostStream(Device device, StreamId id, std::chrono::milliseconds wait_timeout)
      : device_(device), id_(id), wait_timeout_(wait_timeout) {}

  Device device() const override { return device_; }
  StreamId id() const override { return id_; }

  std::shared_ptr<Event> launch(std::function<void()> work) override {
    try {
      work();
    } catch (...) {
      return completed_event(std::current_exception());
    }
    return completed_event();
  }
  std::shared_ptr<Event> record() override { return completed_event(); }
  void wait(std::shared_ptr<Event> event) override {
    if (event) event->synchronize(wait_timeout_, "an event " + device_.to_string() + " " + id_.to_string() + " waits on");
  }

 private:
  Device device_;
  StreamId id_;
  std::chrono::milliseconds wait_timeout_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(Device device, Allocator& allocator, std::chrono::milliseconds wait_timeout)
      : device_(device), allocator_(allocator), wait_timeout_(wait_timeout) {
    if (device.type != DeviceType::kCpu) {
      throw Error(ErrorKind::kInvalidArgument, "the CPU backend cannot serve device " + device.to_string());
    }
  }

  Device device() const override { return device_; }
  Allocator& allocator() override { return allocator_; }

  Stream& stream(StreamId id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<HostStream>& stream = streams_[id];
    if (!stream) stream = std::make_unique<HostStream>(device_, id, wait_timeout_);
    return *stream;
  }

  std::shared_ptr<Event> copy(const Tensor& source, Tensor& destination, Stream& stream) override {
    if (source.dtype() != destination.dtype() || source.num_elements() != destination.num_elements()) {
      throw Error(ErrorKind::kInvalidArgument, "copy on " + device_.to_string() + ": source " + source.type_string() +
                                                   " and destination " + destination.type_string() + " differ");
    }
    check_host(source, "copy from");
    check_host(destination, "copy into");
    return stream.launch([&source, &destination] {
      if (source.nbytes() > 0 && source.raw_data() != destination.raw_data()) {
        std::memmove(destination.raw_data(), source.raw_data(), source.nbytes());
      }
    });
  }

  std::shared_ptr<Event> fill_zero(Tensor& tensor, Stream& stream) override {
    check_host(tensor, "fill");
    return stream.launch([&tensor] {
      if (tensor.nbytes() > 0) std::memset(tensor.raw_data(), 0, tensor.nbytes());
    });
  }

  // Host streams finish their work inside launch(): nothing is outstanding.
  void synchronize(std::chrono::milliseconds) override {}

 private:
  void check_host(const Tensor& tensor, const char* what) const {
    if (tensor.defined() && tensor.device().type != DeviceType::kCpu) {
      throw Error(ErrorKind::kInvalidArgument, std::string("the CPU backend of ") + device_.to_string() + " cannot " +
                                                   what + " a tensor on " + tensor.device().to_string());
    }
  }

  Device device_;
  Allocator& allocator_;
  std::chrono::milliseconds wait_timeout_;
  std::mutex mutex_;
  std::map<StreamId, std::unique_ptr<HostStream>> streams_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(Device device, Allocator& allocator, std::chrono::milliseconds wait_timeout) {
  return std::make_unique<CpuBackend>(device, allocator, wait_timeout);
}

}  // namespace weir
