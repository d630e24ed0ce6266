#include "runtime/memory_planner.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "core/allocator.h"
#include "ops/comm/device_copy.h"

namespace weir {

namespace {

int64_t align_up(int64_t bytes) {
  const int64_t a = static_cast<int64_t>(kTensorAlignment);
  return (bytes + a - 1) / a * a;
}

// The byte size of a value, or -1 when a dim is symbolic and unbound, or for
// a sequence or optional value (its kernel makes it; its elements own their
// memory).
int64_t static_bytes(const Value* value, const SymbolBindings* bindings) {
  const TensorType& type = value->type();
  if (type.dtype == DType::kUndefined || !type.shape.has_rank() || !type.is_tensor()) return -1;
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

// A buffer: a planned root value with the views of it, the in-place outputs
// written over it and the buffers joined into it (a Concat's inputs, a
// Split's outputs), and the steps that define or read any of them.
struct Buffer {
  Device device;
  int64_t bytes = 0;
  std::vector<const Value*> values;  // [0] is the root
  std::vector<int> first_defs;       // the root's producer, and each joined buffer's
  std::vector<int> defs;             // every step that writes it
  std::vector<int> touches;          // defining and reading steps
  bool has_views = false;
  bool dead = false;                 // merged into another buffer
  int64_t offset = 0;
};

// Views whose output is always exactly the input's bytes (a Cast to another
// dtype, or a Dropout, may produce new memory instead).
bool same_bytes_view(const Node& node) {
  if (!node.domain().empty()) return false;
  const std::string& op = node.op_type();
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity") return true;
  return op == "Cast" && node.num_inputs() > 0 && node.input(0) != nullptr && node.output(0) != nullptr &&
         node.input(0)->dtype() == node.output(0)->dtype();
}

// The product of a static shape's dims before `axis` (-1: unknown): 1 means
// the pieces along `axis` are contiguous byte ranges.
int64_t leading_extent(const Value* value, int64_t axis) {
  const TensorType& type = value->type();
  if (!type.shape.has_rank()) return -1;
  const int64_t rank = static_cast<int64_t>(type.shape.dims().size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return -1;
  int64_t extent = 1;
  for (int64_t d = 0; d < axis; ++d) {
    const Dim& dim = type.shape.dims()[static_cast<size_t>(d)];
    if (!dim.is_static()) return -1;
    extent *= dim.size();
  }
  return extent;
}

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

namespace {

class Planner {
 public:
  Planner(const Graph& graph, const Schedule& schedule, const OpRegistry& registry, const SymbolBindings* bindings)
      : graph_(graph), schedule_(schedule), registry_(registry), bindings_(bindings) {}

  MemoryPlan run(bool join) {
    collect_buffers();
    plan_in_place();
    plan_.join_pieces = join;
    if (join) join_pieces();
    place();
    return std::move(plan_);
  }

 private:
  bool before(int a, int b) const { return schedule_.happens_before(a, b); }

  void add_reads(int buffer, const Value* value) {
    for (const Use& use : value->uses()) {
      if (use.node != nullptr) buffers_[static_cast<size_t>(buffer)].touches.push_back(step_of_.at(use.node));
    }
  }

  int buffer_of(const Value* value) const {
    auto it = buffer_of_.find(value);
    return it == buffer_of_.end() ? -1 : it->second;
  }

  // One buffer per planned value; views join the buffer they view.
  void collect_buffers() {
    for (size_t i = 0; i < schedule_.steps.size(); ++i) step_of_[schedule_.steps[i].node] = static_cast<int>(i);
    for (size_t i = 0; i < schedule_.steps.size(); ++i) {
      const ScheduleStep& step = schedule_.steps[i];
      const Node* node = step.node;
      bool view = has(registry_, node, OpTrait::kViewOfInput);
      for (size_t o = 0; o < node->num_outputs(); ++o) {
        const Value* value = node->output(o);
        if (value == nullptr) continue;
        if (view && o == 0) {
          // The output may be input 0's memory: it joins input 0's buffer.
          const Value* input = node->num_inputs() > 0 ? node->input(0) : nullptr;
          int b = input != nullptr ? buffer_of(input) : -1;
          buffer_of_[value] = b;
          if (b >= 0) {
            buffers_[static_cast<size_t>(b)].values.push_back(value);
            buffers_[static_cast<size_t>(b)].has_views = true;
            add_reads(b, value);
            if (exact_.count(input) && same_bytes_view(*node)) exact_.insert(value);
            offset_in_buffer_[value] = offset_in_buffer_[input];
          }
          continue;
        }
        int64_t bytes = static_bytes(value, bindings_);
        // Every device type is planned alike: the session allocates each
        // device's arena from that device's backend allocator. A copy back
        // to the host is in host memory, not in its device's arena.
        if (bytes <= 0 || copies_to_host(*node)) {
          buffer_of_[value] = -1;
          continue;
        }
        Buffer buffer;
        buffer.device = step.device;
        buffer.bytes = bytes;
        buffer.values = {value};
        buffer.first_defs = {static_cast<int>(i)};
        buffer.defs = {static_cast<int>(i)};
        buffer.touches = {static_cast<int>(i)};
        buffers_.push_back(std::move(buffer));
        int b = static_cast<int>(buffers_.size()) - 1;
        buffer_of_[value] = b;
        slotted_.insert(value);
        exact_.insert(value);
        add_reads(b, value);
      }
    }
    // A buffer any of whose values is a graph output outlives the run: not planned.
    std::unordered_set<const Value*> graph_outputs(graph_.outputs().begin(), graph_.outputs().end());
    for (Buffer& buffer : buffers_) {
      for (const Value* value : buffer.values) {
        if (graph_outputs.count(value)) buffer.dead = true;
      }
    }
  }

  // In place: an op's output 0 over the input its schema names (input 0 of
  // an elementwise op) when the op is the input's last reader (every other
  // reader happens before it) and reads that value through no other input.
  void plan_in_place() {
    for (size_t i = 0; i < schedule_.steps.size(); ++i) {
      const Node* node = schedule_.steps[i].node;
      const OpSchema* schema = registry_.find(node->op_type(), node->domain());
      std::optional<size_t> index = schema != nullptr ? schema->inplace_input() : std::nullopt;
      if (!index || node->num_inputs() <= *index || node->num_outputs() == 0 || node->input(*index) == nullptr ||
          node->output(0) == nullptr) {
        continue;
      }
      const Value* source = node->input(*index);
      bool read_twice = false;
      for (size_t k = 0; k < node->num_inputs(); ++k) read_twice = read_twice || (k != *index && node->input(k) == source);
      if (read_twice && *index != 0) continue;
      const int in_index = buffer_of(source), out_index = buffer_of(node->output(0));
      if (in_index < 0 || out_index < 0 || in_index == out_index) continue;
      Buffer& in = buffers_[static_cast<size_t>(in_index)];
      Buffer& out = buffers_[static_cast<size_t>(out_index)];
      if (in.dead || out.dead || in.has_views || out.has_views) continue;
      if (in.bytes != out.bytes || !(in.device == out.device)) continue;
      bool last_reader = std::all_of(in.touches.begin(), in.touches.end(), [&](int t) {
        return t == static_cast<int>(i) || before(t, static_cast<int>(i));
      });
      if (!last_reader) continue;
      for (const Value* value : out.values) {
        in.values.push_back(value);
        buffer_of_[value] = in_index;
        aliases_input_.insert(value);
      }
      in.touches.insert(in.touches.end(), out.touches.begin(), out.touches.end());
      in.defs.insert(in.defs.end(), out.defs.begin(), out.defs.end());
      out.dead = true;
      ++plan_.in_place_values;
    }
  }

  // A Concat's inputs written where the Concat would copy them (inside its
  // output), and a Split's outputs left where the Split would copy them from
  // (inside its input): the kernels then copy nothing. Pieces along an axis
  // with nothing before it (a bucket of flat gradients) are byte ranges; each
  // joins at a 64-byte-aligned offset when the sharing is safe in every run:
  // the buffer read first (the Concat's inputs, the Split's input) is
  // written only before the step, and read before any later write to the
  // other (an in-place op over the Concat's output or a Split's output).
  void join_pieces() {
    for (size_t i = 0; i < schedule_.steps.size(); ++i) {
      const ScheduleStep& step = schedule_.steps[i];
      const Node* node = step.node;
      if (!node->domain().empty() || step.device.type != DeviceType::kCpu) continue;
      if (node->op_type() == "Concat" && node->num_outputs() == 1) join_concat(static_cast<int>(i), *node);
      if (node->op_type() == "Split" && node->num_inputs() >= 1) join_split(static_cast<int>(i), *node);
    }
  }

  void join_concat(int step, const Node& node) {
    const Value* output = node.output(0);
    const int parent = output != nullptr ? buffer_of(output) : -1;
    if (parent < 0 || buffers_[static_cast<size_t>(parent)].dead || buffers_[static_cast<size_t>(parent)].values.front() != output) return;
    if (!node.has_attr("axis") || leading_extent(output, node.attr("axis").i()) != 1) return;
    // Writes to the output after the Concat (in place over it).
    const std::vector<int> later_writes = writes_other_than(parent, step);
    int64_t offset = 0;
    bool joined = false;
    for (size_t k = 0; k < node.num_inputs(); ++k) {
      const Value* piece = node.input(k);
      const int64_t bytes = piece != nullptr ? static_bytes(piece, bindings_) : -1;
      if (bytes < 0) return;  // the offsets after it are unknown
      const int64_t at = offset;
      offset += bytes;
      const int child = candidate(piece, bytes, at, parent);
      if (child < 0) continue;
      const Buffer& c = buffers_[static_cast<size_t>(child)];
      if (!std::all_of(c.defs.begin(), c.defs.end(), [&](int d) { return before(d, step); })) continue;
      if (!read_before_writes(c.touches, step, later_writes)) continue;
      join(parent, child, at);
      joined = true;
    }
    if (joined) aliases_input_.insert(output);
  }

  void join_split(int step, const Node& node) {
    const Value* input = node.input(0);
    const int parent = input != nullptr ? buffer_of(input) : -1;
    if (parent < 0 || buffers_[static_cast<size_t>(parent)].dead || !exact_.count(input)) return;
    const int64_t axis = node.has_attr("axis") ? node.attr("axis").i() : 0;
    if (leading_extent(input, axis) != 1) return;
    const Buffer& p = buffers_[static_cast<size_t>(parent)];
    // The input is written only before the Split.
    if (!std::all_of(p.defs.begin(), p.defs.end(), [&](int d) { return before(d, step); })) return;
    const std::vector<int> input_reads = p.touches;
    int64_t offset = offset_in_buffer_[input];
    for (size_t k = 0; k < node.num_outputs(); ++k) {
      const Value* piece = node.output(k);
      const int64_t bytes = piece != nullptr ? static_bytes(piece, bindings_) : -1;
      if (bytes < 0) return;
      const int64_t at = offset;
      offset += bytes;
      const int child = candidate(piece, bytes, at, parent);
      if (child < 0 || !read_before_writes(input_reads, step, writes_other_than(child, step))) continue;
      join(parent, child, at);
      aliases_input_.insert(piece);
    }
  }

  // The buffer of `piece` when it may join `parent` `at` bytes from its
  // start (aligned, on its device), and the piece is all of that buffer,
  // exactly (not a view that may be a copy); else -1.
  int candidate(const Value* piece, int64_t bytes, int64_t at, int parent) const {
    const int b = buffer_of(piece);
    if (b < 0 || b == parent || at % kAlignment != 0 || !exact_.count(piece)) return -1;
    const Buffer& buffer = buffers_[static_cast<size_t>(b)];
    if (buffer.dead || buffer.bytes != bytes || !(buffer.device == buffers_[static_cast<size_t>(parent)].device)) return -1;
    auto offset = offset_in_buffer_.find(piece);
    return offset == offset_in_buffer_.end() || offset->second == 0 ? b : -1;
  }

  // The steps that write buffer `b`, but `step`.
  std::vector<int> writes_other_than(int b, int step) const {
    std::vector<int> writes;
    for (int d : buffers_[static_cast<size_t>(b)].defs) {
      if (d != step) writes.push_back(d);
    }
    return writes;
  }

  // Every read (other than `step`) happens before every write.
  bool read_before_writes(const std::vector<int>& reads, int step, const std::vector<int>& writes) const {
    return std::all_of(reads.begin(), reads.end(), [&](int t) {
      return t == step || std::all_of(writes.begin(), writes.end(), [&](int d) { return before(t, d); });
    });
  }

  // Buffer `child` moves inside `parent`, `offset` bytes from its start.
  void join(int parent, int child, int64_t offset) {
    Buffer& p = buffers_[static_cast<size_t>(parent)];
    Buffer& c = buffers_[static_cast<size_t>(child)];
    for (const Value* value : c.values) {
      p.values.push_back(value);
      buffer_of_[value] = parent;
      offset_in_buffer_[value] += offset;
    }
    p.first_defs.insert(p.first_defs.end(), c.first_defs.begin(), c.first_defs.end());
    p.defs.insert(p.defs.end(), c.defs.begin(), c.defs.end());
    p.touches.insert(p.touches.end(), c.touches.begin(), c.touches.end());
    c.dead = true;
    ++plan_.joined_values;
  }

  // Greedy by size, per device.
  void place() {
    std::vector<int> order;
    for (size_t b = 0; b < buffers_.size(); ++b) {
      Buffer& buffer = buffers_[b];
      if (buffer.dead) continue;
      std::sort(buffer.touches.begin(), buffer.touches.end());
      buffer.touches.erase(std::unique(buffer.touches.begin(), buffer.touches.end()), buffer.touches.end());
      order.push_back(static_cast<int>(b));
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return buffers_[a].bytes > buffers_[b].bytes; });
    // a is done before b's memory is first written (by any of its roots).
    auto done_before = [&](const Buffer& a, const Buffer& b) {
      return std::all_of(a.touches.begin(), a.touches.end(), [&](int t) {
        return std::all_of(b.first_defs.begin(), b.first_defs.end(), [&](int d) { return t != d && before(t, d); });
      });
    };
    std::map<std::string, std::vector<int>> placed;  // device -> buffers placed so far
    for (int b : order) {
      Buffer& buffer = buffers_[static_cast<size_t>(b)];
      std::vector<std::pair<int64_t, int64_t>> busy;
      for (int other : placed[buffer.device.to_string()]) {
        const Buffer& o = buffers_[static_cast<size_t>(other)];
        if (done_before(o, buffer) || done_before(buffer, o)) continue;
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
      int arena = plan_.arena_of(buffer.device);
      if (arena < 0) {
        plan_.arenas.push_back({buffer.device, 0});
        arena = static_cast<int>(plan_.arenas.size()) - 1;
      }
      plan_.arenas[arena].bytes = std::max(plan_.arenas[arena].bytes, offset + align_up(buffer.bytes));
      for (const Value* value : buffer.values) {
        // Views are not given a slot: the kernel returns the viewed memory.
        if (!slotted_.count(value) && !aliases_input_.count(value)) continue;
        int64_t bytes = static_bytes(value, bindings_);
        plan_.slots[value] = {arena, offset + offset_in_buffer_[value], bytes, aliases_input_.count(value) > 0};
        plan_.total_value_bytes += bytes;
        ++plan_.planned_values;
      }
    }
  }

  static constexpr int64_t kAlignment = static_cast<int64_t>(kTensorAlignment);

  const Graph& graph_;
  const Schedule& schedule_;
  const OpRegistry& registry_;
  const SymbolBindings* bindings_;
  MemoryPlan plan_;
  std::unordered_map<const Node*, int> step_of_;
  std::vector<Buffer> buffers_;
  std::unordered_map<const Value*, int> buffer_of_;  // also for views, -1 for unplannable roots
  std::unordered_map<const Value*, int64_t> offset_in_buffer_;  // bytes from its buffer's start
  std::unordered_set<const Value*> exact_;           // exactly its buffer's bytes (not a view that may copy)
  std::unordered_set<const Value*> slotted_;         // roots: given a slot
  std::unordered_set<const Value*> aliases_input_;   // shares memory with an input of its producer
};

}  // namespace

MemoryPlan plan_memory(const Graph& graph, const Schedule& schedule, const OpRegistry& registry,
                       const SymbolBindings* bindings, bool join_pieces) {
  return Planner(graph, schedule, registry, bindings).run(join_pieces);
}

}  // namespace weir
