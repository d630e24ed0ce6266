// A metered world: every collective this rank makes through it is counted
// (the bytes this rank sends and the messages, by the algorithm's α-β model
// in collective_cost.h) and, optionally, slowed down to what a slower link
// would take, so the public-cloud case (1 or 10 Gbit/s between machines)
// can be measured on one machine. graph-runner train --simulate-link.
//
//   auto meter = std::make_shared<weir::CommunicationMeter>();
//   std::shared_ptr<weir::World> world = weir::metered_world(inner, meter, {.gigabits_per_second = 1});
//   ... run steps with SessionOptions::world = world ...
//   meter->sent_bytes();   // what this rank has sent, every group and subgroup together
//
// Counting: a collective of a group of p ranks on an input of n bytes
// counts what a ring sends (AllReduce 2(p-1)/p n, AllGather (p-1) n,
// ReduceScatter (p-1)/p n, Broadcast n; send n; recv and barrier nothing)
// whatever the backend underneath does, so figures compare across backends
// and with graph-runner explain. A skipped collective (gradient merge,
// LocalSGD between averages) never reaches the communicator and counts
// nothing.
//
// Simulated link: after the real call returns, the calling stream sleeps
// for the call's α-β time on the simulated link (each message's latency
// plus the bytes over the bandwidth), minus what the real call took. A
// communication stream sleeps while compute streams go on, so overlap is
// simulated too. send and recv each wait one message's time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/world.h"

namespace weir {

struct SimulatedLink {
  double gigabits_per_second = 0;  // 0: no simulation, count only
  double latency_us = 0;           // per message
};

// "GBPS[,LATENCY_US]" (graph-runner's --simulate-link): "1", "10,50";
// throws weir::Error(kInvalidArgument) naming the text otherwise.
SimulatedLink parse_simulated_link(const std::string& text);
std::string describe(const SimulatedLink& link);  // "1 Gbit/s, 50 us per message"

// One rank's counters; shared by the communicators of its world and their
// subgroups. Thread-safe (several communication streams call at once).
class CommunicationMeter {
 public:
  void record(int64_t sent_bytes, int64_t messages, double simulated_seconds);
  int64_t sent_bytes() const { return sent_bytes_.load(); }
  int64_t messages() const { return messages_.load(); }
  int64_t calls() const { return calls_.load(); }
  double simulated_seconds() const { return static_cast<double>(simulated_ns_.load()) * 1e-9; }

 private:
  std::atomic<int64_t> sent_bytes_{0};
  std::atomic<int64_t> messages_{0};
  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> simulated_ns_{0};
};

// `inner` with every communicator (and subgroup) counted into `meter`, and
// slowed to `link` when it has a bandwidth. Everything else (rank, devices,
// abort) is inner's.
std::shared_ptr<World> metered_world(std::shared_ptr<World> inner, std::shared_ptr<CommunicationMeter> meter,
                                     const SimulatedLink& link = {});

}  // namespace weir
