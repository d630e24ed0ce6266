// Schedule — the order a placed graph runs in, as data.
//
//   weir::Schedule s = weir::build_schedule(graph, registry);
//   for (const weir::ScheduleStep& step : s.steps) ...   // one per node, in global order
//   s.streams[step.stream];                               // device, name, in-order?
//   s.happens_before(a, b);                               // step a finishes before b starts
//
// One global order, a topological order in which the members of each
// collective round (the k-th call with one tag and group on every device,
// or a Send and its Recv) sit next to each other. Communication streams run
// in that order; because every device follows the same global order, the
// k-th collective of one device meets the k-th of the others, and no device
// waits on a collective that another device has queued behind something
// that waits on the first. A graph whose collectives cannot be ordered that
// way (one device's AllReduce feeds another's earlier one) is rejected.
//
// Streams: each device has a "compute" stream, whose ready steps run in any
// order on the runtime's thread pool, and in-order streams: the node's
// stream annotation, else "comm" for collective ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/graph.h"
#include "core/op_schema.h"
#include "core/stream.h"

namespace weir {

inline constexpr const char* kComputeStream = "compute";
inline constexpr const char* kCommStream = "comm";

struct StreamInfo {
  Device device;
  std::string name;
  // The backend stream it runs on: "compute" is compute 0; a name StreamId
  // parses ("comm", "comm:1", "copy") is that stream; any other name (such as
  // recomputation's) is a further compute stream of its device, numbered
  // from 1 in order of first use.
  StreamId id;
  bool in_order = false;    // compute streams are not: ready steps run concurrently
  std::vector<int> steps;   // in global order
};

struct ScheduleStep {
  Node* node = nullptr;
  Device device;
  int device_index = 0;            // index of `device` in the plan's devices (its rank when the plan
                                   // holds several devices of an in-process group)
  bool output_views_input = false; // the op has kViewOfInput: output 0 may be input 0's memory
  bool collective = false;         // the op has kCollective
  int stream = 0;                  // index into Schedule::streams
  std::vector<int> predecessors;   // steps that must finish first: data, control and stream order
  std::vector<int> successors;     // the reverse edges
};

struct Schedule {
  std::vector<ScheduleStep> steps;
  std::vector<StreamInfo> streams;
  // ancestors[b] has bit a set when step a finishes before step b starts in
  // every run (a chain of predecessor edges from a to b).
  std::vector<std::vector<uint64_t>> ancestors;
  bool has_collectives = false;

  bool happens_before(int a, int b) const {
    return (ancestors[b][static_cast<size_t>(a) / 64] >> (a % 64)) & 1u;
  }
  int step_of(const Node* node) const;
};

// Orders the nodes of a placed graph (every node has a device among
// `devices`; device i is communicator rank i). `order`, when given, is the
// global order to keep (a loaded plan's); otherwise it is computed. Throws
// weir::Error(kInvalidGraph) naming the nodes when a collective lacks its
// counterpart on a device of its group, or the collectives cannot be ordered
// alike on all devices.
Schedule build_schedule(const Graph& graph, const std::vector<Device>& devices, const OpRegistry& registry,
                        const std::vector<Node*>* order = nullptr);

}  // namespace weir
