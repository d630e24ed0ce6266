// The memory one run of a graph needs, from the memory planner, without
// instantiating kernels: what the recompute pass compares checkpoint
// choices by, and what --memory-budget is checked against.
//
//   weir::MemoryEstimate m = weir::estimate_memory(graph);   // places the graph on cpu:0 where unplaced
//   m.total();   // arena + persistent + inputs + outputs + values allocated at run time
//
// The arena is the planned peak of the intermediate values (forward
// activations, gradients); persistent values (parameters, optimizer state)
// and constants live for the whole session; graph inputs are fed and graph
// outputs are allocated per run. What the session takes from the caching
// allocator (the arena, persistent values, outputs) is counted as the
// allocator rounds it; constants and inputs (the graph's and the caller's
// memory) at their size. Values the planner leaves to run time (symbolic
// dims, a Dropout's output in training, a Cast's to another dtype) are
// counted at the peak of their sum in the order one inter-op thread runs
// the steps, sized where their dims are only shapes of static values;
// kernels' scratch memory is not counted.
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "core/op_schema.h"

namespace weir {

struct MemoryEstimate {
  int64_t arena_bytes = 0;
  int64_t persistent_bytes = 0;  // persistent values and constants
  int64_t input_bytes = 0;
  int64_t output_bytes = 0;
  int64_t run_time_bytes = 0;  // values allocated when produced, at their peak
  int64_t total() const { return arena_bytes + persistent_bytes + input_bytes + output_bytes + run_time_bytes; }
};

// Places unplaced nodes on cpu:0 (the graph is changed only by that).
MemoryEstimate estimate_memory(Graph& graph, const OpRegistry& registry);
MemoryEstimate estimate_memory(Graph& graph);

}  // namespace weir
