// The memory one run of a graph needs, from the memory planner, without
// instantiating kernels: what the recompute pass compares checkpoint
// choices by, and what --memory-budget is checked against.
//
//   weir::MemoryEstimate m = weir::estimate_memory(graph);   // places the graph on cpu:0 where unplaced
//   m.total();   // arena + persistent + inputs + outputs
//
// The arena is the planned peak of the intermediate values (forward
// activations, gradients); persistent values (parameters, optimizer state)
// and constants live for the whole session; graph inputs are fed and graph
// outputs are allocated per run; both are counted as the caching allocator
// rounds them. Values with unbound symbolic dims are not counted, nor is
// kernels' scratch memory.
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
  int64_t total() const { return arena_bytes + persistent_bytes + input_bytes + output_bytes; }
};

// Places unplaced nodes on cpu:0 (the graph is changed only by that).
MemoryEstimate estimate_memory(Graph& graph, const OpRegistry& registry);
MemoryEstimate estimate_memory(Graph& graph);

}  // namespace weir
