// What graph-runner train reports of its communication: each rank's world
// metered (distributed/metered_world.h), optionally slowed to a simulated
// link (--simulate-link), and the bytes the reporting rank (rank 0, or this
// process's rank) sent in every step.
//
//   tools::StepCommunication comm(link);
//   options.wrap_world = [&](auto world) { return comm.wrap(std::move(world)); };
//   options.before_steps = [&] { comm.start(); };
//   options.after_step = [&](int64_t, double) { comm.record_step(); };
//   ... train ...
//   comm.report(print_each_step, first_step);
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/world.h"
#include "distributed/metered_world.h"

namespace weir::tools {

class StepCommunication {
 public:
  explicit StepCommunication(SimulatedLink link) : link_(link) {}

  // `world` metered; the meter of rank 0 (or of the only rank wrapped) is
  // the one reported.
  std::shared_ptr<World> wrap(std::shared_ptr<World> world);
  void start();        // the baseline: what was sent before the first step (the sessions' start-up)
  void record_step();  // the bytes sent since the last call

  // Result lines: "bytes_sent_per_step: MEAN", "bytes_sent_last_step: B",
  // "messages_per_step: M" and, with a simulated link, the link; with
  // `each_step`, "step N bytes_sent: B" first.
  void report(bool each_step, int64_t first_step) const;

 private:
  SimulatedLink link_;
  std::mutex mutex_;
  std::shared_ptr<CommunicationMeter> reported_;
  int64_t last_bytes_ = 0;
  int64_t first_messages_ = 0;
  std::vector<int64_t> step_bytes_;
};

}  // namespace weir::tools
