#include "runtime/memory_estimate.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "core/type_inference.h"
#include "ops/dtype_dispatch.h"
#include "ops/register_ops.h"
#include "passes/simplify/shape_op_folding.h"
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

// What the caching allocator hands out for a request of `bytes`: its bin.
int64_t binned(int64_t bytes) {
  return bytes > 0 ? static_cast<int64_t>(CachingAllocator::bin_size(static_cast<size_t>(bytes))) : 0;
}

bool is_constant_zero(const Value* value) {
  if (value == nullptr || !value->is_constant() || !value->data().defined() || value->data().num_elements() != 1) return false;
  const Tensor& t = value->data();
  bool zero = false;
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) zero = !t.data<bool>()[0];
    else zero = load(t.data<T>()[0]) == ComputeType<T>(0);
  });
  return zero;
}

// Whether a kViewOfInput op's output 0 is new memory after all: a Cast to
// another dtype, and a Dropout in training (a training_mode that is not a
// constant false, a ratio that is not a constant 0) write a fresh tensor.
bool view_allocates(const Node& node) {
  if (!node.domain().empty() || node.num_inputs() == 0 || node.input(0) == nullptr || node.output(0) == nullptr) return false;
  if (node.op_type() == "Cast") return node.input(0)->dtype() != node.output(0)->dtype();
  if (node.op_type() != "Dropout") return false;
  const Value* ratio = node.num_inputs() > 1 ? node.input(1) : nullptr;
  const Value* training = node.num_inputs() > 2 ? node.input(2) : nullptr;
  return training != nullptr && !is_constant_zero(training) && !is_constant_zero(ratio);
}

// Each step's position in the order a session with one inter-op thread
// (the default) runs them: ready steps first in, first out, the first ones
// in schedule order, a finished step's successors in its list's order.
std::vector<int> run_positions(const Schedule& schedule) {
  const size_t n = schedule.steps.size();
  std::vector<int> pending(n), position(n, static_cast<int>(n));
  std::deque<int> ready;
  for (size_t i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(schedule.steps[i].predecessors.size());
    if (pending[i] == 0) ready.push_back(static_cast<int>(i));
  }
  int next = 0;
  while (!ready.empty()) {
    const int step = ready.front();
    ready.pop_front();
    position[static_cast<size_t>(step)] = next++;
    for (int successor : schedule.steps[static_cast<size_t>(step)].successors) {
      if (--pending[static_cast<size_t>(successor)] == 0) ready.push_back(successor);
    }
  }
  return position;
}

// The values a kernel allocates when it produces them, outside the arena:
// the ones the planner could not size (symbolic dims) and views that write
// new memory. Each lives from its producer to its last reader (or its
// views' last reader), when the session drops it; the peak of their sum,
// in the order one inter-op thread runs the steps, is what the run adds to
// the arena. Symbolic dims that are only the shapes of statically shaped
// values (Reshape(dY, Shape(X)): a view's gradient) are sized from a copy
// of the graph with those Shape nodes folded. Kernels' own scratch is not
// counted.
int64_t run_time_bytes(const Graph& graph, const Schedule& schedule, const MemoryPlan& plan, const OpRegistry& registry) {
  const std::vector<int> position = run_positions(schedule);
  std::unordered_map<const Node*, int> step_of;  // its position
  for (size_t i = 0; i < schedule.steps.size(); ++i) step_of[schedule.steps[i].node] = position[i];
  const std::set<const Value*> outputs(graph.outputs().begin(), graph.outputs().end());
  std::unique_ptr<Graph> sized;  // the folded copy, made when a size needs it
  bool sized_failed = false;
  auto size_of = [&](const Value* value) -> int64_t {
    if (int64_t bytes = bytes_of(value); bytes > 0 || value->shape().is_static()) return bytes;
    if (!sized && !sized_failed) {
      try {
        sized = graph.clone();
        PassContext context;
        ShapeOpFolding().run(*sized, context);
        infer_graph_types(*sized, registry);
      } catch (const std::exception&) {  // sizes it cannot find are left out, as the planner leaves them
        sized_failed = true;
      }
    }
    const Value* same = sized_failed ? nullptr : sized->find_value(value->name());
    return same != nullptr ? bytes_of(same) : 0;
  };
  struct Allocation {
    int64_t bytes = 0;
    int first = 0, last = 0;  // positions
  };
  std::vector<Allocation> allocations;
  std::unordered_map<const Value*, size_t> allocation_of;  // a run-time value and the views of it
  auto extend = [&](size_t a, const Value* value) {
    for (const Use& use : value->uses()) {
      auto found = use.node != nullptr ? step_of.find(use.node) : step_of.end();
      if (found != step_of.end()) allocations[a].last = std::max(allocations[a].last, found->second);
    }
  };
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Node& node = *schedule.steps[i].node;
    for (size_t o = 0; o < node.num_outputs(); ++o) {
      const Value* value = node.output(o);
      if (value == nullptr || outputs.count(value) || plan.find(value) != nullptr) continue;
      if (o == 0 && schedule.steps[i].output_views_input && !view_allocates(node)) {
        auto viewed = node.input(0) != nullptr ? allocation_of.find(node.input(0)) : allocation_of.end();
        if (viewed != allocation_of.end()) {
          allocation_of[value] = viewed->second;
          extend(viewed->second, value);
        }
        continue;
      }
      const int64_t bytes = size_of(value);
      if (bytes <= 0) continue;
      allocations.push_back({binned(bytes), position[i], position[i]});
      allocation_of[value] = allocations.size() - 1;
      extend(allocations.size() - 1, value);
    }
  }
  std::vector<int64_t> change(schedule.steps.size() + 2, 0);
  for (const Allocation& a : allocations) {
    change[static_cast<size_t>(a.first)] += a.bytes;
    change[static_cast<size_t>(a.last) + 1] -= a.bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t delta : change) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
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
    estimate.arena_bytes += binned(arena.bytes);
  }
  estimate.run_time_bytes = run_time_bytes(graph, schedule, plan, registry);
  // The session copies persistent values into its allocator; constants stay
  // where the graph holds them.
  for (const Value* v : graph.persistents()) estimate.persistent_bytes += binned(bytes_of(v));
  for (const Value* v : graph.constants()) estimate.persistent_bytes += bytes_of(v);
  for (const Value* v : graph.inputs()) estimate.input_bytes += bytes_of(v);
  std::set<const Value*> outputs(graph.outputs().begin(), graph.outputs().end());
  for (const Value* v : outputs) {
    if (v->producer() != nullptr && !v->is_persistent()) estimate.output_bytes += binned(bytes_of(v));
  }
  return estimate;
}

}  // namespace weir
