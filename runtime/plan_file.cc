#include "runtime/plan_file.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/allocation_limits.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/fbs/plan_generated.h"
#include "core/logging.h"
#include "core/mapped_file.h"
#include "core/verifier.h"
#include "ops/register_ops.h"

namespace weir {

namespace {

constexpr char kMagic[8] = {'W', 'E', 'I', 'R', 'P', 'L', 'A', 'N'};
constexpr size_t kHeaderBytes = 32;

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

void put_u64(std::string& out, size_t at, uint64_t value) { std::memcpy(out.data() + at, &value, sizeof(value)); }

uint64_t get_u64(const char* at) {
  uint64_t value;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

// ---- writing ----

class PlanWriter {
 public:
  explicit PlanWriter(const Plan& plan) : plan_(plan) {}

  std::string write() {
    const Graph& graph = plan_.graph();
    const auto& values = plan_.values();
    std::vector<flatbuffers::Offset<fbs::Value>> value_tables;
    for (const Value* value : values) value_tables.push_back(write_value(*value));

    std::vector<flatbuffers::Offset<fbs::Node>> nodes;
    const Schedule& schedule = plan_.schedule();
    for (size_t s = 0; s < schedule.steps.size(); ++s) {
      nodes.push_back(write_node(*schedule.steps[s].node, schedule, plan_.kernel(s).packed_constants()));
    }

    std::vector<int32_t> inputs, outputs;
    for (const Value* v : graph.inputs()) inputs.push_back(plan_.value_index(v));
    for (const Value* v : graph.outputs()) outputs.push_back(plan_.value_index(v));
    std::vector<flatbuffers::Offset<flatbuffers::String>> devices;
    for (const Device& d : plan_.devices()) devices.push_back(fb_.CreateString(d.to_string()));
    const MemoryPlan& memory = plan_.memory();
    std::vector<flatbuffers::Offset<fbs::Arena>> arenas;
    for (const DeviceArena& arena : memory.arenas) {
      arenas.push_back(fbs::CreateArena(fb_, fb_.CreateString(arena.device.to_string()), arena.bytes));
    }
    std::vector<flatbuffers::Offset<fbs::Slot>> slots;
    for (const Value* value : values) {
      if (const BufferSlot* slot = memory.find(value)) {
        slots.push_back(fbs::CreateSlot(fb_, plan_.value_index(value), slot->arena, slot->offset, slot->bytes,
                                        slot->in_place));
      }
    }
    auto root = fbs::CreatePlan(fb_, kPlanFormatVersion, fb_.CreateString(graph.name()), fb_.CreateVector(value_tables),
                                fb_.CreateVector(inputs), fb_.CreateVector(outputs), fb_.CreateVector(nodes),
                                fb_.CreateVector(devices), fb_.CreateVector(arenas), fb_.CreateVector(slots),
                                memory.total_value_bytes, memory.in_place_values, memory.joined_values,
                                any_packed_ ? fb_.CreateString(packed_constant_target()) : 0);
    fbs::FinishPlanBuffer(fb_, root);

    size_t fb_size = fb_.GetSize();
    size_t weights_offset = align64(kHeaderBytes + fb_size);
    std::string out(weights_offset + weights_.size(), '\0');
    std::memcpy(out.data(), kMagic, sizeof(kMagic));
    put_u64(out, 8, kHeaderBytes);
    put_u64(out, 16, fb_size);
    put_u64(out, 24, weights_offset);
    std::memcpy(out.data() + kHeaderBytes, fb_.GetBufferPointer(), fb_size);
    std::memcpy(out.data() + weights_offset, weights_.data(), weights_.size());
    return out;
  }

 private:
  flatbuffers::Offset<fbs::TensorData> write_tensor(const Tensor& tensor) {
    if (tensor.device().type != DeviceType::kCpu) {
      throw Error(ErrorKind::kUnsupported, "plan files hold host tensors only");
    }
    size_t offset = align64(weights_.size());
    weights_.resize(offset + tensor.nbytes(), '\0');
    if (tensor.nbytes() > 0) std::memcpy(weights_.data() + offset, tensor.raw_data(), tensor.nbytes());
    return fbs::CreateTensorData(fb_, static_cast<int32_t>(tensor.dtype()), fb_.CreateVector(tensor.sizes()), offset,
                                 tensor.nbytes());
  }

  flatbuffers::Offset<fbs::TensorType> write_type(const TensorType& type) {
    if (!type.is_tensor()) {
      throw Error(ErrorKind::kUnsupported, "plan files hold tensor values only, not " + type.to_string() +
                                               "; save the model as .weir instead");
    }
    std::vector<flatbuffers::Offset<fbs::Dim>> dims;
    if (type.shape.has_rank()) {
      for (const Dim& dim : type.shape.dims()) {
        dims.push_back(dim.is_static() ? fbs::CreateDim(fb_, dim.size())
                                       : fbs::CreateDim(fb_, -1, fb_.CreateString(dim.symbol_name())));
      }
    }
    return fbs::CreateTensorType(fb_, static_cast<int32_t>(type.dtype), type.shape.has_rank(), fb_.CreateVector(dims));
  }

  flatbuffers::Offset<fbs::Value> write_value(const Value& value) {
    auto name = fb_.CreateString(value.name());
    auto type = write_type(value.type());
    flatbuffers::Offset<fbs::TensorData> data = 0;
    if ((value.is_constant() || value.is_persistent()) && value.data().defined()) data = write_tensor(value.data());
    return fbs::CreateValue(fb_, name, type, static_cast<fbs::ValueKind>(value.kind()),
                            static_cast<int32_t>(value.role()), data);
  }

  flatbuffers::Offset<fbs::Attribute> write_attribute(const Node& node, const std::string& name, const Attribute& attr) {
    auto key = fb_.CreateString(name);
    int32_t type = static_cast<int32_t>(attr.type());
    switch (attr.type()) {
      case AttrType::kInt: return fbs::CreateAttribute(fb_, key, type, attr.i());
      case AttrType::kFloat: return fbs::CreateAttribute(fb_, key, type, 0, attr.f());
      case AttrType::kString: return fbs::CreateAttribute(fb_, key, type, 0, 0, fb_.CreateString(attr.s()));
      case AttrType::kInts: return fbs::CreateAttribute(fb_, key, type, 0, 0, 0, fb_.CreateVector(attr.ints()));
      case AttrType::kFloats:
        return fbs::CreateAttribute(fb_, key, type, 0, 0, 0, 0, fb_.CreateVector(attr.floats()));
      case AttrType::kStrings:
        return fbs::CreateAttribute(fb_, key, type, 0, 0, 0, 0, 0, fb_.CreateVectorOfStrings(attr.strings()));
      case AttrType::kTensor: {
        std::vector<flatbuffers::Offset<fbs::TensorData>> tensors = {write_tensor(attr.t())};
        return fbs::CreateAttribute(fb_, key, type, 0, 0, 0, 0, 0, 0, fb_.CreateVector(tensors));
      }
      case AttrType::kTensors: {
        std::vector<flatbuffers::Offset<fbs::TensorData>> tensors;
        for (const Tensor& t : attr.tensors()) tensors.push_back(write_tensor(t));
        return fbs::CreateAttribute(fb_, key, type, 0, 0, 0, 0, 0, 0, fb_.CreateVector(tensors));
      }
      case AttrType::kGraph:
      case AttrType::kGraphs: break;
    }
    throw Error(ErrorKind::kUnsupported,
                "attribute '" + name + "' is a sub-graph; plan files do not hold sub-graphs yet")
        .with_node(node.name());
  }

  flatbuffers::Offset<fbs::Node> write_node(const Node& node, const Schedule& schedule,
                                            const std::vector<PackedConstant>& packs) {
    std::vector<int32_t> inputs, outputs, control;
    for (const Value* v : node.inputs()) inputs.push_back(v == nullptr ? -1 : plan_.value_index(v));
    for (const Value* v : node.outputs()) outputs.push_back(v == nullptr ? -1 : plan_.value_index(v));
    for (const Node* c : node.control_inputs()) control.push_back(schedule.step_of(c));
    std::vector<flatbuffers::Offset<fbs::Attribute>> attrs;
    for (const auto& [name, attr] : node.attributes()) attrs.push_back(write_attribute(node, name, attr));
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fbs::PackedConstant>>> packed = 0;
    if (!packs.empty()) {
      std::vector<flatbuffers::Offset<fbs::PackedConstant>> tables;
      for (const PackedConstant& pack : packs) {
        auto layout = fb_.CreateVector(reinterpret_cast<const uint8_t*>(pack.layout.data()), pack.layout.size());
        tables.push_back(fbs::CreatePackedConstant(fb_, layout, write_tensor(pack.data)));
      }
      packed = fb_.CreateVector(tables);
      any_packed_ = true;
    }
    return fbs::CreateNode(fb_, fb_.CreateString(node.name()), fb_.CreateString(node.op_type()),
                           fb_.CreateString(node.domain()), fb_.CreateVector(inputs), fb_.CreateVector(outputs),
                           fb_.CreateVector(attrs), fb_.CreateVector(control),
                           fb_.CreateString(node.device() ? node.device()->to_string() : ""),
                           fb_.CreateString(node.stream()), packed);
  }

  const Plan& plan_;
  flatbuffers::FlatBufferBuilder fb_;
  std::string weights_;
  bool any_packed_ = false;
};

// ---- reading ----

class PlanReader {
 public:
  PlanReader(std::shared_ptr<MappedFile> file, const fbs::Plan& root, const char* weights, size_t weights_size)
      : file_(std::move(file)), root_(root), weights_(weights), weights_size_(weights_size) {}

  std::unique_ptr<Graph> graph() {
    auto g = std::make_unique<Graph>(root_.graph_name() ? root_.graph_name()->str() : "plan");
    const auto* values = root_.values();
    if (values == nullptr) fail("the plan has no value table");
    values_.resize(values->size(), nullptr);
    std::vector<bool> is_input(values->size(), false);
    if (root_.graph_inputs()) {
      for (int32_t i : *root_.graph_inputs()) is_input[index(i, values->size(), "graph input")] = true;
    }
    for (uint32_t i = 0; i < values->size(); ++i) {
      const fbs::Value* v = values->Get(i);
      std::string name = v->name() ? v->name()->str() : "";
      if (name.empty()) fail("value " + std::to_string(i) + " has no name");
      TensorType type = read_type(v->type(), name);
      switch (v->kind()) {
        case fbs::ValueKind::Input:
          if (!is_input[i]) fail("value '" + name + "' is an input but not listed as one");
          values_[i] = g->add_input(name, type);
          break;
        case fbs::ValueKind::Constant:
          if (v->data() == nullptr) fail("constant '" + name + "' has no data");
          values_[i] = g->add_constant(name, read_tensor(*v->data(), name));
          break;
        case fbs::ValueKind::Persistent: {
          int32_t role = v->role();
          if (role < 0 || role > static_cast<int32_t>(PersistentRole::kBuffer)) fail("value '" + name + "' has role " + std::to_string(role));
          values_[i] = g->add_persistent(name, type, static_cast<PersistentRole>(role),
                                         v->data() ? read_tensor(*v->data(), name) : Tensor());
          break;
        }
        case fbs::ValueKind::Intermediate: values_[i] = g->add_value(name, type); break;
        default: fail("value '" + name + "' has an unknown kind");
      }
    }
    const auto* nodes = root_.nodes();
    if (nodes == nullptr) fail("the plan has no node table");
    for (uint32_t n = 0; n < nodes->size(); ++n) {
      const fbs::Node* node = nodes->Get(n);
      std::string name = node->name() ? node->name()->str() : "";
      if (node->op_type() == nullptr) fail("node " + std::to_string(n) + " has no op type");
      std::vector<Value*> inputs, outputs;
      if (node->inputs()) {
        for (int32_t i : *node->inputs()) inputs.push_back(i == -1 ? nullptr : values_[index(i, values_.size(), "node input")]);
      }
      if (node->outputs()) {
        for (int32_t i : *node->outputs()) {
          Value* out = i == -1 ? nullptr : values_[index(i, values_.size(), "node output")];
          if (out != nullptr && (out->kind() != ValueKind::kIntermediate || out->producer() != nullptr)) {
            fail("node '" + name + "' writes '" + out->name() + "', which is not a fresh intermediate value");
          }
          outputs.push_back(out);
        }
      }
      std::map<std::string, Attribute> attrs;
      if (node->attributes()) {
        for (const fbs::Attribute* a : *node->attributes()) attrs[a->name() ? a->name()->str() : ""] = read_attribute(*a, name);
      }
      Node* created = g->add_node_with_outputs(node->op_type()->str(), inputs, outputs, std::move(attrs), name);
      if (node->domain()) created->set_domain(node->domain()->str());
      if (node->device() && node->device()->size() > 0) created->set_device(Device::parse(node->device()->str()));
      if (node->stream()) created->set_stream(node->stream()->str());
      nodes_.push_back(created);
      packs_.push_back(read_packs(*node, name));
    }
    for (uint32_t n = 0; n < nodes->size(); ++n) {
      const fbs::Node* node = nodes->Get(n);
      if (!node->control_inputs()) continue;
      for (int32_t c : *node->control_inputs()) nodes_[n]->add_control_input(nodes_[index(c, n, "control input")]);
    }
    if (root_.graph_outputs()) {
      for (int32_t i : *root_.graph_outputs()) g->add_output(values_[index(i, values_.size(), "graph output")]);
    }
    return g;
  }

  std::vector<Device> devices() {
    std::vector<Device> devices;
    if (root_.devices()) {
      for (const auto* d : *root_.devices()) devices.push_back(Device::parse(d->str()));
    }
    if (devices.empty()) fail("the plan lists no devices");
    return devices;
  }

  MemoryPlan memory() {
    MemoryPlan memory;
    if (root_.arenas()) {
      for (const fbs::Arena* a : *root_.arenas()) {
        if (a->device() == nullptr || a->bytes() < 0) fail("an arena has no device or a negative size");
        // The arena is allocated when a session starts: its size is charged
        // against the caps here, where the file is named.
        charge_allocation(static_cast<uint64_t>(a->bytes()), "the arena on " + a->device()->str());
        memory.arenas.push_back({Device::parse(a->device()->str()), a->bytes()});
      }
    }
    if (root_.slots()) {
      for (const fbs::Slot* s : *root_.slots()) {
        Value* value = values_[index(s->value(), values_.size(), "slot value")];
        size_t arena = index(s->arena(), memory.arenas.size(), "slot arena");
        if (value->kind() != ValueKind::kIntermediate) fail("slot for '" + value->name() + "', which is not an intermediate");
        // The value's bytes, or -1 when its shape is not static or its size
        // overflows (the shape comes from the file).
        int64_t needed = -1;
        if (value->shape().has_rank() && value->shape().is_static()) {
          std::optional<int64_t> count = checked_num_elements(value->shape().sizes());
          if (!count || __builtin_mul_overflow(*count, static_cast<int64_t>(dtype_size(value->dtype())), &needed)) {
            needed = -1;
          }
        }
        if (s->offset() < 0 || s->offset() % 64 != 0 || s->bytes() < needed || needed < 0 ||
            s->bytes() > memory.arenas[arena].bytes - s->offset()) {
          fail("slot of '" + value->name() + "' (offset " + std::to_string(s->offset()) + ", " +
               std::to_string(s->bytes()) + " bytes) does not fit its value or arena");
        }
        memory.slots[value] = {static_cast<int>(arena), s->offset(), s->bytes(), s->in_place()};
        ++memory.planned_values;
      }
    }
    // An arena is as large as its furthest slot (rounded to 64 bytes, as the
    // planner lays buffers out) and no larger: a file must not make a
    // session allocate memory that no value uses.
    std::vector<int64_t> slots_end(memory.arenas.size(), 0);
    for (const auto& [value, slot] : memory.slots) {
      int64_t end = slot.offset + (slot.bytes + 63) / 64 * 64;
      slots_end[static_cast<size_t>(slot.arena)] = std::max(slots_end[static_cast<size_t>(slot.arena)], end);
    }
    for (size_t a = 0; a < memory.arenas.size(); ++a) {
      if (memory.arenas[a].bytes > slots_end[a]) {
        fail("the arena on " + memory.arenas[a].device.to_string() + " declares " +
             std::to_string(memory.arenas[a].bytes) + " bytes, but its slots end at " + std::to_string(slots_end[a]));
      }
    }
    memory.total_value_bytes = root_.total_value_bytes();
    memory.in_place_values = root_.in_place_values();
    memory.joined_values = root_.joined_values();
    return memory;
  }

  const std::vector<Node*>& nodes() const { return nodes_; }
  // The packed constants of node n (in file order); views of the mapping.
  std::vector<PackedConstant>& packs(size_t n) { return packs_[n]; }

  [[noreturn]] static void fail(const std::string& message) { throw Error(ErrorKind::kFormat, message); }

 private:
  // The flatbuffers 2.0 verifier checks a vector's length word for 4-byte
  // alignment but not its elements': a [long] or [double] vector of a
  // crafted file may start 4 bytes off 8, and reading it would be a
  // misaligned load. Flatbuffers' own builder aligns every non-empty one
  // (an empty one, such as a scalar's sizes, may sit anywhere: nothing is read).
  template <typename T>
  static const flatbuffers::Vector<T>* aligned(const flatbuffers::Vector<T>* vector, const std::string& what) {
    if (vector != nullptr && vector->size() > 0 && reinterpret_cast<uintptr_t>(vector->data()) % alignof(T) != 0) {
      fail(what + " is not aligned to " + std::to_string(alignof(T)) + " bytes in the plan table");
    }
    return vector;
  }

  static size_t index(int64_t i, size_t size, const char* what) {
    if (i < 0 || static_cast<uint64_t>(i) >= size) {
      fail(std::string(what) + " index " + std::to_string(i) + " is out of range (" + std::to_string(size) + ")");
    }
    return static_cast<size_t>(i);
  }

  static TensorType read_type(const fbs::TensorType* type, const std::string& name) {
    TensorType out;
    if (type == nullptr) return out;
    if (type->dtype() != 0 && !is_valid_dtype(type->dtype())) fail("value '" + name + "' has dtype code " + std::to_string(type->dtype()));
    out.dtype = static_cast<DType>(type->dtype());
    if (!type->has_rank()) return out;
    std::vector<Dim> dims;
    if (type->dims()) {
      for (const fbs::Dim* d : *type->dims()) {
        if (d->size() >= 0) dims.emplace_back(d->size());
        else if (d->symbol() && d->symbol()->size() > 0) dims.push_back(Dim::symbol(d->symbol()->str()));
        else fail("value '" + name + "' has a dim with neither size nor symbol");
      }
    }
    out.shape = Shape(std::move(dims));
    return out;
  }

  Tensor read_tensor(const fbs::TensorData& data, const std::string& what) {
    if (!is_valid_dtype(data.dtype()) || data.dtype() == 0) fail("tensor of '" + what + "' has dtype code " + std::to_string(data.dtype()));
    DType dtype = static_cast<DType>(data.dtype());
    std::vector<int64_t> sizes;
    uint64_t elements = 1;
    if (aligned(data.sizes(), "the sizes of the tensor of '" + what + "'")) {
      for (int64_t s : *data.sizes()) {
        if (s < 0 || (s > 0 && elements > std::numeric_limits<uint64_t>::max() / 64 / static_cast<uint64_t>(s))) {
          fail("tensor of '" + what + "' has a bad size");
        }
        elements *= static_cast<uint64_t>(s);
        sizes.push_back(s);
      }
    }
    uint64_t bytes = elements * dtype_size(dtype);
    if (bytes != data.bytes() || data.offset() % 64 != 0 || data.offset() > weights_size_ ||
        bytes > weights_size_ - data.offset()) {
      fail("tensor of '" + what + "' (" + std::to_string(data.bytes()) + " bytes at " + std::to_string(data.offset()) +
           ") does not fit the weights section of " + std::to_string(weights_size_) + " bytes");
    }
    // Zero-copy: a view of the mapped file, which stays mapped while it lives.
    void* at = const_cast<char*>(weights_ + data.offset());
    return Tensor::wrap(dtype, std::move(sizes), at, Device::cpu(), file_);
  }

  std::vector<PackedConstant> read_packs(const fbs::Node& node, const std::string& name) {
    std::vector<PackedConstant> packs;
    if (node.packed() == nullptr) return packs;
    for (const fbs::PackedConstant* pack : *node.packed()) {
      std::string what = "a packed constant of node '" + name + "'";
      if (pack->layout() == nullptr || pack->data() == nullptr) fail(what + " has no layout or no data");
      Tensor data = read_tensor(*pack->data(), what);
      if (data.dtype() != DType::kUInt8 || data.rank() != 1) fail(what + " is " + data.type_string() + "; expected u8[n]");
      packs.push_back({std::string(reinterpret_cast<const char*>(pack->layout()->data()), pack->layout()->size()),
                       std::move(data), /*adopted=*/true});
    }
    return packs;
  }

  Attribute read_attribute(const fbs::Attribute& a, const std::string& node) {
    std::string what = "attribute of node '" + node + "'";
    switch (static_cast<AttrType>(a.type())) {
      case AttrType::kInt: return Attribute(a.i());
      case AttrType::kFloat: return Attribute(a.f());
      case AttrType::kString: return Attribute(a.s() ? a.s()->str() : std::string());
      case AttrType::kInts:
        return Attribute(aligned(a.ints(), "the ints of an " + what) ? std::vector<int64_t>(a.ints()->begin(), a.ints()->end())
                                                                     : std::vector<int64_t>{});
      case AttrType::kFloats:
        return Attribute(aligned(a.floats(), "the floats of an " + what)
                             ? std::vector<double>(a.floats()->begin(), a.floats()->end())
                             : std::vector<double>{});
      case AttrType::kStrings: {
        std::vector<std::string> strings;
        if (a.strings()) {
          for (const auto* s : *a.strings()) strings.push_back(s->str());
        }
        return Attribute(std::move(strings));
      }
      case AttrType::kTensor:
        if (a.tensors() == nullptr || a.tensors()->size() != 1) fail(what + " should hold one tensor");
        return Attribute(read_tensor(*a.tensors()->Get(0), what));
      case AttrType::kTensors: {
        std::vector<Tensor> tensors;
        if (a.tensors()) {
          for (const fbs::TensorData* t : *a.tensors()) tensors.push_back(read_tensor(*t, what));
        }
        return Attribute(std::move(tensors));
      }
      default: break;
    }
    fail(what + " has type code " + std::to_string(a.type()));
  }

  std::shared_ptr<MappedFile> file_;
  const fbs::Plan& root_;
  const char* weights_;
  size_t weights_size_;
  std::vector<Value*> values_;
  std::vector<Node*> nodes_;
  std::vector<std::vector<PackedConstant>> packs_;
};

// Hands each kernel of `plan` the packed constants its node has in the file,
// when they were packed for this machine's target; otherwise the kernels pack
// on their first run, as for an unpacked plan, and a note says why.
void adopt_packs(const Plan& plan, PlanReader& reader, const fbs::Plan& root, const std::filesystem::path& path) {
  size_t packed_nodes = 0;
  for (size_t n = 0; n < reader.nodes().size(); ++n) packed_nodes += reader.packs(n).empty() ? 0 : 1;
  if (packed_nodes == 0) return;
  std::string saved_for = root.packing_target() ? root.packing_target()->str() : "";
  for (char& c : saved_for) c = c >= ' ' && c <= '~' ? c : '?';  // the file's bytes, printed
  std::string here = packed_constant_target();
  if (saved_for != here) {
    logger().warn("{}: the weights of {} nodes were packed for '{}', this machine is '{}': they are packed again on "
                  "the first run (save the plan again here to keep them)",
                  path.string(), packed_nodes, saved_for, here);
    return;
  }
  std::unordered_map<const Node*, size_t> file_index;
  for (size_t n = 0; n < reader.nodes().size(); ++n) file_index[reader.nodes()[n]] = n;
  const Schedule& schedule = plan.schedule();
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    auto found = file_index.find(schedule.steps[s].node);
    if (found == file_index.end() || reader.packs(found->second).empty()) continue;
    plan.kernel(s).adopt_packed_constants(std::move(reader.packs(found->second)));
  }
  logger().debug("{}: the weights of {} nodes come packed for '{}'", path.string(), packed_nodes, here);
}

}  // namespace

void save_plan(const Plan& plan, const std::filesystem::path& path) {
  std::string bytes;
  try {
    bytes = PlanWriter(plan).write();
  } catch (Error& error) {
    error.with_file(path.string());
    throw;
  }
  write_file_atomically(path, bytes);
}

std::shared_ptr<const Plan> load_plan(const std::filesystem::path& path, const LoadPlanOptions& options) {
  const OpRegistry& ops = options.ops != nullptr ? *options.ops : default_op_registry();
  const KernelRegistry& kernels = options.kernels != nullptr ? *options.kernels : default_kernel_registry();
  // Pages on touch: a packed plan's kernels read their packs and never the
  // plain weights beside them, and populating ResNet-50's whole 234 MB took
  // 15 ms, more than faulting in what the first run reads.
  std::shared_ptr<MappedFile> file = map_file(path, SIZE_MAX, MapPages::kOnTouch);
  LoadBudget budget;  // the plan's arenas count against the per-model cap
  try {
    const char* base = static_cast<const char*>(file->data);
    if (file->size < kHeaderBytes || std::memcmp(base, kMagic, sizeof(kMagic)) != 0) {
      PlanReader::fail("not a Weir plan file (no WEIRPLAN header)");
    }
    uint64_t fb_offset = get_u64(base + 8), fb_size = get_u64(base + 16), weights_offset = get_u64(base + 24);
    if (fb_offset != kHeaderBytes || fb_size > file->size - kHeaderBytes || weights_offset % 64 != 0 ||
        weights_offset < fb_offset + fb_size || weights_offset > file->size) {
      PlanReader::fail("the header's sections do not fit a file of " + std::to_string(file->size) +
                       " bytes (truncated?)");
    }
    const auto* fb = reinterpret_cast<const uint8_t*>(base + fb_offset);
    flatbuffers::Verifier verifier(fb, fb_size);
    if (!fbs::VerifyPlanBuffer(verifier)) PlanReader::fail("the plan table is corrupted (flatbuffers verifier)");
    const fbs::Plan& root = *fbs::GetPlan(fb);
    if (root.format_version() != kPlanFormatVersion) {
      throw Error(ErrorKind::kUnsupported, "plan format version " + std::to_string(root.format_version()) +
                                               "; this build reads version " + std::to_string(kPlanFormatVersion));
    }
    PlanReader reader(file, root, base + weights_offset, file->size - weights_offset);
    std::unique_ptr<Graph> graph = reader.graph();
    verify_graph(*graph, ops);
    std::vector<Device> devices = reader.devices();
    std::vector<Node*> order = reader.nodes();
    Schedule schedule = build_schedule(*graph, devices, ops, &order);
    MemoryPlan memory = reader.memory();
    for (const DeviceArena& arena : memory.arenas) {
      if (std::find(devices.begin(), devices.end(), arena.device) == devices.end()) {
        PlanReader::fail("an arena is on " + arena.device.to_string() + ", which is not a device of the plan");
      }
    }
    auto plan = std::make_shared<const Plan>(std::move(graph), std::move(devices), std::move(schedule),
                                             std::move(memory), kernels, &ops);
    adopt_packs(*plan, reader, root, path);
    return plan;
  } catch (Error& error) {
    error.with_file(path.string());
    throw;
  }
}

}  // namespace weir
