// The CPU backend: host memory, and streams that run work at once on the
// thread that launches it, so an event is complete when launch() returns.
// This is Weir's behaviour from before backends existed, kept exactly (no
// hand-off, no extra thread), because host kernels are fastest run by the
// executor thread that found them ready.
//
//   std::unique_ptr<weir::Backend> cpu = weir::make_cpu_backend(weir::Device::cpu(1), allocator);
//   cpu->stream({weir::StreamKind::kCommunication, 0}).launch([&] { ... });   // runs now
//
// Stream::wait() on an event of another backend (one that completes later)
// blocks the caller until it completes, for at most `wait_timeout`.
#pragma once

#include <chrono>
#include <memory>

#include "core/backend.h"

namespace weir {

std::unique_ptr<Backend> make_cpu_backend(Device device, Allocator& allocator,
                                          std::chrono::milliseconds wait_timeout = std::chrono::minutes(10));

}  // namespace weir
