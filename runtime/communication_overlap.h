// How much of a trace's communication ran while its device computed: the
// figure that says whether gradient buckets hide the allreduce behind the
// backward pass.
//
//   weir::Profiler profiler;  ... session.run(feeds, {.profiler = &profiler}) ...
//   weir::CommunicationOverlap overlap = weir::communication_overlap(profiler.events());
//   overlap.fraction();   // 0: communication ran alone; 1: always beside computation
//
// Communication is the events on a device's communication streams ("comm",
// "comm:1", ...); computation is its compute streams' (every other stream:
// "compute", recomputation's). An instant of communication counts as
// overlapped when any compute event of the same device runs then.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/profiler.h"

namespace weir {

struct CommunicationOverlap {
  int64_t communication_ns = 0;  // summed over the communication events
  int64_t overlapped_ns = 0;     // of that, while the device computed
  int64_t events = 0;            // communication events
  double fraction() const {
    return communication_ns > 0 ? static_cast<double>(overlapped_ns) / static_cast<double>(communication_ns) : 0.0;
  }
};

CommunicationOverlap communication_overlap(const std::vector<ProfileEvent>& events);

}  // namespace weir
