// Backend — what the runtime needs of one device: streams, an allocator,
// copies and fills in stream order, and a way to wait for all of it.
//
//   std::unique_ptr<weir::Backend> cpu = weir::make_cpu_backend(weir::Device::cpu(), weir::cpu_allocator());
//   weir::Stream& compute = cpu->stream({weir::StreamKind::kCompute, 0});
//   weir::Tensor t(weir::DType::kFloat32, {4}, cpu->allocator());
//   cpu->fill_zero(t, compute);
//   cpu->copy(host, t, compute)->synchronize(std::chrono::seconds(10));
//
// One backend per device a session runs on. The executor goes through it for
// everything that depends on where memory lives or when work is done, so a
// device type comes with its backend and needs no executor change. The CPU
// backend (runtime/cpu_backend.h) runs work at once on the calling thread;
// the CUDA backend will map streams to cudaStream_t and events to
// cudaEvent_t. Backends are thread-safe: several host threads launch on one
// backend's streams at once.
#pragma once

#include <chrono>
#include <memory>

#include "core/allocator.h"
#include "core/device.h"
#include "core/stream.h"
#include "core/tensor.h"

namespace weir {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  // Where tensors of this device come from.
  virtual Allocator& allocator() = 0;
  // Host memory this device copies to and from fastest: where a session puts
  // the outputs it hands back. Plain host memory by default; page-locked
  // (pinned) for a GPU, whose copies into it need no staging by the driver.
  virtual Allocator& host_allocator() { return cpu_allocator(); }
  // The stream `id` of this device, created on first use; the reference
  // stays valid as long as the backend.
  virtual Stream& stream(StreamId id) = 0;

  // Copies `source`'s bytes into `destination` (same dtype and element
  // count; either may live on the host or on this device) in `stream`'s
  // order, and returns the event of its completion.
  virtual std::shared_ptr<Event> copy(const Tensor& source, Tensor& destination, Stream& stream) = 0;
  // Sets every byte of `tensor` (on this device) to zero in `stream`'s order.
  virtual std::shared_ptr<Event> fill_zero(Tensor& tensor, Stream& stream) = 0;

  // Waits for everything launched on every stream of this device; throws
  // weir::Error(kDevice) naming the device when `timeout` passes first.
  virtual void synchronize(std::chrono::milliseconds timeout) = 0;
};

}  // namespace weir
