// Streams and events — the order work runs in on a device, and how the
// executor learns that it is done.
//
//   weir::Stream& compute = backend.stream({weir::StreamKind::kCompute, 0});
//   std::shared_ptr<weir::Event> done = compute.launch([&] { kernel.compute(ctx); });
//   done->synchronize(std::chrono::minutes(10));   // rethrows what the kernel threw
//
//   weir::Stream& comm = backend.stream({weir::StreamKind::kCommunication, 1});
//   comm.wait(done);   // work launched on comm later starts after `done`
//
// A stream runs what is launched on it in launch order; work launched from
// inside work the stream is running (a kernel zeroing its output through
// the backend) comes next in that order, so a host stream runs it in place.
// What "runs" means is
// the backend's: a host stream may run the function at once on the caller
// (the CPU backend: its event is complete when launch() returns) or later on
// its own thread; a CUDA stream runs the function at once on the caller,
// which enqueues device work, and the event completes when the device has
// done it. The executor therefore never takes "launch returned" for "done":
// it completes a step by its event, or, on a stream that runs_ahead(),
// hands the event to the steps of other streams that read the step's results.
//
// Stream kinds are an enum: each device has compute streams (0: the one
// ordinary kernels run on; more for work the schedule runs in its own order,
// such as recomputation), communication streams 0..N-1 (collectives; several
// let collectives overlap) and copy streams.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/device.h"

namespace weir {

enum class StreamKind { kCompute, kCommunication, kCopy };

const char* stream_kind_name(StreamKind kind);  // "compute", "comm", "copy"

struct StreamId {
  StreamKind kind = StreamKind::kCompute;
  int index = 0;

  // "compute", "comm", "copy" (index 0) or "comm:2".
  std::string to_string() const;
  // The inverse of to_string(); throws weir::Error(kInvalidArgument) naming
  // the text and the accepted forms.
  static StreamId parse(std::string_view text);
  bool operator==(const StreamId& other) const = default;
  auto operator<=>(const StreamId& other) const = default;
};

class Event {
 public:
  virtual ~Event() = default;
  // True once the work the event follows has finished (or failed).
  virtual bool query() const = 0;
  // Blocks until the work has finished. Rethrows the exception that work
  // threw, if any; throws weir::Error(kDevice) naming `what` when `timeout`
  // passes first.
  virtual void synchronize(std::chrono::milliseconds timeout, const std::string& what = "stream work") const = 0;
};

// An event that is already complete: what host-synchronous work returns.
std::shared_ptr<Event> completed_event(std::exception_ptr error = nullptr);

class Stream {
 public:
  virtual ~Stream() = default;
  virtual Device device() const = 0;
  virtual StreamId id() const = 0;

  // Runs `work` in stream order and returns the event of its completion,
  // which carries what `work` threw. A backend that runs `work` at once may
  // instead let the exception propagate from launch().
  virtual std::shared_ptr<Event> launch(std::function<void()> work) = 0;
  // An event that completes when everything launched so far has.
  virtual std::shared_ptr<Event> record() = 0;
  // Work launched after this call starts only once `event` has completed.
  virtual void wait(std::shared_ptr<Event> event) = 0;
  // True when work may still be running after launch() returns (a GPU's
  // streams): the executor then goes on launching without waiting, and
  // memory the work uses is kept from other streams until it is done
  // (runtime/caching_allocator.h). False for host streams.
  virtual bool runs_ahead() const { return false; }
  // The device API's own handle (a cudaStream_t), for code that enqueues
  // device work itself, such as a plugin's CUDA kernel; nullptr for host
  // streams.
  virtual void* native_handle() const { return nullptr; }
};

}  // namespace weir
