#include "runtime/memory_planner.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "core/allocator.h"

namespace weir {

namespace {

int64_t align_up(int64_t bytes) {
  const int64_t a = static_cast<int64_t>(kTensorAlignment);
  return (bytes + a - 1) / a * a;
}

// The byte size of a value, or -1 when a dim is symbolic and unbound.
int64_t static_bytes(const Value* value, const SymbolBindings* bindings) {
  const TensorType& type = value->type();
  if (type.dtype == DType::kUndefined || !type.shape.has_rank()) return -1;
  int64_t elements = 1;
  for (const Dim& dim : type.shape.dims()) {
    int64_t size = -1;
    if (dim.is_static()) {
      size = dim.size();
    } else if (bindings != nullptr) {
      auto found = bindings->find(dim.symbol_name());
      if (found != bindings->end()) size = found->second;
    }
    if (size < 0 || (size > 0 && elements > (int64_t{1} << 50) / size)) return -1;
    elements *= size;
  }
  return elements * static_cast<int64_t>(dtype_size(type.dtype));
}

// A buffer: a planned root value with the views of it and the in-place
// outputs written over it, and the steps that define or read any of them.
struct Buffer {
  Device device;
  int64_t bytes = 0;
  std::vector<const Value*> values;  // [0] is the root
  int first_def = 0;
  std::vector<int> touches;          // defining and reading steps
  bool has_views = false;
  bool dead = false;                 // merged into another buffer
  int64_t offset = 0;
};

bool has(const OpRegistry& registry, const Node* node, OpTrait trait) {
  const OpSchema* schema = registry.find(node->op_type(), node->domain());
  return schema != nullptr && schema->has(trait);
}

}  // namespace

int64_t MemoryPlan::planned_bytes() const {
  int64_t total = 0;
  for (const DeviceArena& arena : arenas) total += arena.bytes;
  return total;
}

const BufferSlot* MemoryPlan::find(const Value* value) const {
  auto it = slots.find(value);
  return it == slots.end() ? nullptr : &it->second;
}

int MemoryPlan::arena_of(const Device& device) const {
  for (size_t i = 0; i < arenas.size(); ++i) {
    if (arenas[i].device == device) return static_cast<int>(i);
  }
  return -1;
}

MemoryPlan plan_memory(const Graph& graph, const Schedule& schedule, const OpRegistry& registry,
                       const SymbolBindings* bindings) {
  std::unordered_set<const Value*> graph_outputs(graph.outputs().begin(), graph.outputs().end());
  std::unordered_map<const Node*, int> step_of;
  for (size_t i = 0; i < schedule.steps.size(); ++i) step_of[schedule.steps[i].node] = static_cast<int>(i);

  std::vector<Buffer> buffers;
  std::unordered_map<const Value*, int> buffer_of;  // also for views, -1 for unplannable roots
  auto add_reads = [&](int buffer, const Value* value) {
    for (const Use& use : value->uses()) {
      if (use.node != nullptr) buffers[buffer].touches.push_back(step_of.at(use.node));
    }
  };
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const ScheduleStep& step = schedule.steps[i];
    const Node* node = step.node;
    bool view = has(registry, node, OpTrait::kViewOfInput);
    for (size_t o = 0; o < node->num_outputs(); ++o) {
      const Value* value = node->output(o);
      if (value == nullptr) continue;
      if (view && o == 0) {
        // The output may be input 0's memory: it joins input 0's buffer.
        const Value* input = node->num_inputs() > 0 ? node->input(0) : nullptr;
        auto it = input != nullptr ? buffer_of.find(input) : buffer_of.end();
        int b = it == buffer_of.end() ? -1 : it->second;
        buffer_of[value] = b;
        if (b >= 0) {
          buffers[b].values.push_back(value);
          buffers[b].has_views = true;
          add_reads(b, value);
        }
        continue;
      }
      int64_t bytes = static_bytes(value, bindings);
      // Every device type is planned alike: the session allocates each
      // device's arena from that device's backend allocator.
      if (bytes <= 0) {
        buffer_of[value] = -1;
        continue;
      }
      Buffer buffer;
      buffer.device = step.device;
      buffer.bytes = bytes;
      buffer.values = {value};
      buffer.first_def = static_cast<int>(i);
      buffer.touches = {static_cast<int>(i)};
      buffers.push_back(std::move(buffer));
      int b = static_cast<int>(buffers.size()) - 1;
      buffer_of[value] = b;
      add_reads(b, value);
    }
  }
  // A buffer any of whose values is a graph output outlives the run: not planned.
  for (Buffer& buffer : buffers) {
    for (const Value* value : buffer.values) {
      if (graph_outputs.count(value)) buffer.dead = true;
    }
  }

  MemoryPlan plan;
  // In place: an op's output 0 over the input its schema names (input 0 of
  // an elementwise op) when the op is the input's last reader (every other
  // reader happens before it) and reads that value through no other input.
  std::unordered_map<const Value*, bool> in_place;
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Node* node = schedule.steps[i].node;
    const OpSchema* schema = registry.find(node->op_type(), node->domain());
    std::optional<size_t> index = schema != nullptr ? schema->inplace_input() : std::nullopt;
    if (!index || node->num_inputs() <= *index || node->num_outputs() == 0 || node->input(*index) == nullptr ||
        node->output(0) == nullptr) {
      continue;
    }
    const Value* source = node->input(*index);
    bool read_twice = false;
    for (size_t k = 0; k < node->num_inputs(); ++k) read_twice = read_twice || (k != *index && node->input(k) == source);
    if (read_twice && *index != 0) continue;
    auto in_it = buffer_of.find(source);
    auto out_it = buffer_of.find(node->output(0));
    if (in_it == buffer_of.end() || out_it == buffer_of.end() || in_it->second < 0 || out_it->second < 0) continue;
    Buffer& in = buffers[in_it->second];
    Buffer& out = buffers[out_it->second];
    if (in.dead || out.dead || in.has_views || out.has_views || &in == &out) continue;
    if (in.bytes != out.bytes || !(in.device == out.device)) continue;
    bool last_reader = std::all_of(in.touches.begin(), in.touches.end(), [&](int t) {
      return t == static_cast<int>(i) || schedule.happens_before(t, static_cast<int>(i));
    });
    if (!last_reader) continue;
    for (const Value* value : out.values) {
      in.values.push_back(value);
      buffer_of[value] = in_it->second;
      in_place[value] = true;
    }
    in.touches.insert(in.touches.end(), out.touches.begin(), out.touches.end());
    out.dead = true;
    ++plan.in_place_values;
  }

  // Greedy by size, per device.
  std::vector<int> order;
  for (size_t b = 0; b < buffers.size(); ++b) {
    if (!buffers[b].dead) order.push_back(static_cast<int>(b));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return buffers[a].bytes > buffers[b].bytes; });
  auto before = [&](const Buffer& a, const Buffer& b) {
    return std::all_of(a.touches.begin(), a.touches.end(),
                       [&](int t) { return t != b.first_def && schedule.happens_before(t, b.first_def); });
  };
  std::map<std::string, std::vector<int>> placed;  // device -> buffers placed so far
  for (int b : order) {
    Buffer& buffer = buffers[b];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int other : placed[buffer.device.to_string()]) {
      const Buffer& o = buffers[other];
      if (before(o, buffer) || before(buffer, o)) continue;
      busy.emplace_back(o.offset, o.offset + align_up(o.bytes));
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + align_up(buffer.bytes) <= begin) break;
      offset = std::max(offset, end);
    }
    buffer.offset = offset;
    placed[buffer.device.to_string()].push_back(b);
    int arena = plan.arena_of(buffer.device);
    if (arena < 0) {
      plan.arenas.push_back({buffer.device, 0});
      arena = static_cast<int>(plan.arenas.size()) - 1;
    }
    plan.arenas[arena].bytes = std::max(plan.arenas[arena].bytes, offset + align_up(buffer.bytes));
    for (const Value* value : buffer.values) {
      // Views are not given a slot: the kernel returns the viewed memory.
      if (value != buffer.values.front() && !in_place.count(value)) continue;
      int64_t bytes = static_bytes(value, bindings);
      plan.slots[value] = {arena, offset, bytes, in_place.count(value) > 0};
      plan.total_value_bytes += bytes;
      ++plan.planned_values;
    }
  }
  return plan;
}

}  // namespace weir
