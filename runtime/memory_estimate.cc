#include "runtime/memory_estimate.h"

#include <algorithm>
#include <set>

#include "ops/register_ops.h"
#include "runtime/caching_allocator.h"
#include "runtime/memory_planner.h"
#include "runtime/placement.h"
#include "runtime/schedule.h"

namespace weir {

namespace {

int64_t bytes_of(const Value* value) {
  const TensorType& type = value->type();
  if (type.dtype == DType::kUndefined || !type.shape.is_static() || !type.is_tensor()) return 0;
  return type.shape.num_elements() * static_cast<int64_t>(dtype_size(type.dtype));
}

}  // namespace

MemoryEstimate estimate_memory(Graph& graph) { return estimate_memory(graph, default_op_registry()); }

MemoryEstimate estimate_memory(Graph& graph, const OpRegistry& registry) {
  std::vector<Device> device_list = {Device::cpu()};
  for (const Node* node : graph.nodes()) {
    if (node->device() && std::find(device_list.begin(), device_list.end(), *node->device()) == device_list.end()) {
      device_list.push_back(*node->device());
    }
  }
  place_graph(graph, device_list, Device::cpu());
  Schedule schedule = build_schedule(graph, device_list, registry);
  MemoryPlan plan = plan_memory(graph, schedule, registry);
  MemoryEstimate estimate;
  // Sessions take arenas and outputs from the caching allocator, which
  // rounds each request up to its bin.
  for (const DeviceArena& arena : plan.arenas) {
    if (arena.bytes > 0) estimate.arena_bytes += static_cast<int64_t>(CachingAllocator::bin_size(static_cast<size_t>(arena.bytes)));
  }
  for (const Value* v : graph.persistents()) estimate.persistent_bytes += bytes_of(v);
  for (const Value* v : graph.constants()) estimate.persistent_bytes += bytes_of(v);
  for (const Value* v : graph.inputs()) estimate.input_bytes += bytes_of(v);
  std::set<const Value*> outputs(graph.outputs().begin(), graph.outputs().end());
  for (const Value* v : outputs) {
    if (v->producer() != nullptr && !v->is_persistent() && bytes_of(v) > 0) {
      estimate.output_bytes += static_cast<int64_t>(CachingAllocator::bin_size(static_cast<size_t>(bytes_of(v))));
    }
  }
  return estimate;
}

}  // namespace weir
