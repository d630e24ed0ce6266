// Memory planner: where each intermediate value lives, as an offset in one
// arena per device, decided once when a plan is compiled.
//
//   weir::MemoryPlan memory = weir::plan_memory(graph, schedule, registry);
//   memory.planned_bytes();        // the arenas' total: the planned peak
//   memory.total_value_bytes;      // what the values would take without reuse
//   const weir::BufferSlot* slot = memory.find(value);   // nullptr: allocated at run time
//
// Lifetimes come from the schedule: a value's buffer is busy from its
// producer to its last reader, and a view (Reshape, Identity, ... — the
// kViewOfInput trait) extends the buffer it views. Two buffers may share
// memory only when one's last use happens before the other's producer in
// every run (Schedule::happens_before: a chain of dependencies or stream
// order), which stays true however the thread pool interleaves ready steps.
// An elementwise in-place-able op (kInplaceable) writes its output over its
// first input when it is that input's last reader and the sizes match.
// A Concat's inputs are placed inside its output, and a Split's outputs
// inside its input, where the pieces are byte ranges (nothing before the
// axis, 64-byte-aligned offsets) and no write to one can reach the other
// while it is read: the kernels find each piece already in place and copy
// nothing. So a bucket of flat gradients (passes/collectives/gradient_buckets)
// is where the backward pass writes them, and the averaged pieces are read
// where the AllReduce wrote them.
// Offsets come from the greedy-by-size heuristic: buffers in decreasing size,
// each at the lowest 64-byte-aligned offset free of the buffers it overlaps
// in time.
//
// Planned: values with a static shape produced on a CPU device, that are
// not graph outputs (which outlive the run). Everything else is allocated
// when produced, from the device's caching allocator.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/device.h"
#include "core/graph.h"
#include "core/op_schema.h"
#include "runtime/schedule.h"

namespace weir {

struct BufferSlot {
  int arena = 0;          // index into MemoryPlan::arenas
  int64_t offset = 0;     // bytes from the arena's start, a multiple of 64
  int64_t bytes = 0;
  bool in_place = false;  // shares memory with an input of its producer (in place, or a joined piece)
};

struct DeviceArena {
  Device device;
  int64_t bytes = 0;
};

struct MemoryPlan {
  std::vector<DeviceArena> arenas;
  std::unordered_map<const Value*, BufferSlot> slots;
  int64_t total_value_bytes = 0;  // the planned values' sizes added up: no reuse
  int planned_values = 0;
  int in_place_values = 0;
  int joined_values = 0;  // placed inside a Concat's output or a Split's input
  bool join_pieces = true;  // whether it joins them (kept when a Session plans again)

  int64_t planned_bytes() const;
  const BufferSlot* find(const Value* value) const;
  int arena_of(const Device& device) const;  // -1 when the device has none
};

// Sizes for symbolic dims, by symbol name ("N" -> 8).
using SymbolBindings = std::map<std::string, int64_t>;

// Plans the values whose sizes are known: static ones, and with `bindings`
// those whose symbolic dims are all bound (a Session plans again per input
// shape for a graph with a symbolic batch). Others are allocated when produced.
// `join_pieces` false: Concat and Split pieces get buffers of their own (the
// copies the joins save, to measure them).
MemoryPlan plan_memory(const Graph& graph, const Schedule& schedule, const OpRegistry& registry,
                       const SymbolBindings* bindings = nullptr, bool join_pieces = true);

}  // namespace weir
