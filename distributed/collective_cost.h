// The α-β cost of each collective algorithm Weir's worlds run: α the
// latency of one message, β the seconds per byte of one link (1 /
// bandwidth). What graph-runner explain adds up to plan a job of many ranks
// from one machine.
//
//   weir::LinkModel link{.latency_seconds = 30e-6, .bytes_per_second = 1.2e9};
//   weir::CollectiveCost c = weir::collective_cost("AllReduce", 8, 64 << 20, link);
//   c.seconds;       // 2(p-1) α + 2(p-1)/p n β
//   c.sent_bytes;    // 2(p-1)/p n
//
// The algorithms are rings (Gloo's allreduce and allgather, and Weir's
// reduce-scatter, which sends the same bytes), p the group's ranks, n the
// input's bytes on each rank:
//   AllReduce      2(p-1) messages, 2(p-1)/p n bytes sent
//   ReduceScatter   (p-1) messages,  (p-1)/p n bytes
//   AllGather       (p-1) messages,  (p-1) n bytes (n: each rank's part)
//   Broadcast       (p-1) messages (a pipelined ring), n bytes
// A hierarchical or 2-D allreduce is its phases, each a collective on a
// subgroup: the sum of their costs. A group of one costs nothing.
#pragma once

#include <cstdint>
#include <string>

namespace weir {

struct LinkModel {
  double latency_seconds = 30e-6;   // α
  double bytes_per_second = 1.2e9;  // 1 / β
};

struct CollectiveCost {
  int64_t messages = 0;    // sequential message steps (each pays α)
  int64_t sent_bytes = 0;  // by each rank
  double seconds = 0;
};

// Throws weir::Error (kUnsupported) for an op with no model here.
CollectiveCost collective_cost(const std::string& op_type, int64_t group_size, int64_t input_bytes, const LinkModel& link);

}  // namespace weir
