// A data-parallel step's time on a world of N ranks, estimated from one
// rank's step program: its compute time (measured on one machine, or FLOPs
// over a throughput) spread over its nodes by their FLOPs, and each
// collective's α-β cost (distributed/collective_cost.h). What
// graph-runner explain prints.
//
//   weir::StepTimeEstimate e = weir::estimate_step_time(step_graph, {.world = 64, .link = link,
//                                                                    .compute_seconds = 0.150});
//   e.step_seconds;  e.exposed_communication_seconds;  e.collectives[i].start_seconds ...
//
// The model is a list schedule of two lanes. Computation runs one node at a
// time in topological order, each taking its share of compute_seconds by
// FLOPs, as soon as its inputs exist. Communication runs one collective at
// a time over the rank's link (streams share it), each as soon as its
// inputs exist and the link is free. So a bucket's allreduce overlaps the
// backward pass after it, and each update waits for its own bucket; the
// step ends when the last node does. A collective with a skip input
// (gradient merge) communicates once every `merge_steps` steps and is
// counted at that fraction of its cost. With shared_cores the lanes are one
// (a CPU rank's communication takes the cores its kernels use). Not
// modelled: partial contention between the lanes, and stragglers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "distributed/collective_cost.h"

namespace weir {

struct StepTimeOptions {
  int world = 1;                 // ranks of the world the step runs in
  LinkModel link{};
  double compute_seconds = 0;    // the step's computation on one rank, collectives aside
  int merge_steps = 1;           // gradient merge: steps per communication of skippable collectives
  // true: communication runs on the cores that compute (CPU ranks whose
  // transport and reductions take the cores the kernels use), so the two
  // lanes are one and nothing overlaps.
  bool shared_cores = false;
};

struct CollectiveEstimate {
  std::string node;
  std::string op_type;
  std::string tag;
  int64_t group_size = 0;
  int64_t input_bytes = 0;
  CollectiveCost cost{};
  double ready_seconds = 0;      // its inputs exist
  double start_seconds = 0;      // the link is free too
  double end_seconds = 0;
  bool every_step = true;        // false: skipped between gradient-merge updates
};

struct StepTimeEstimate {
  int64_t flops = 0;
  double compute_seconds = 0;
  double communication_seconds = 0;   // the collectives' costs, summed (amortized under gradient merge)
  double step_seconds = 0;
  double exposed_communication_seconds() const { return step_seconds - compute_seconds; }
  std::vector<CollectiveEstimate> collectives{};  // in the order they start
};

StepTimeEstimate estimate_step_time(const Graph& graph, const StepTimeOptions& options);

// The FLOPs of the step's computation (collectives aside): what
// compute_seconds is spread over, and StepTimeEstimate::flops.
int64_t compute_flops(const Graph& graph);

}  // namespace weir
