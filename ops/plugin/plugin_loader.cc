#include "ops/plugin/plugin_loader.h"

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "ops/plugin/elf_check.h"
#include "weir/plugin.h"

namespace weir {

namespace {

constexpr size_t kErrorBytes = 1024;

bool known_dtype(int32_t dtype) {
  for (DType d : kAllDTypes) {
    if (static_cast<int32_t>(d) == dtype) return true;
  }
  return false;
}

// A message buffer a plugin writes into; always NUL-terminated when read.
struct ErrorBuffer {
  char text[kErrorBytes] = {};
  std::string message() {
    text[kErrorBytes - 1] = '\0';
    return text[0] != '\0' ? std::string(text) : std::string("(no message)");
  }
};

// The op description copied out of the library (its strings included), so
// nothing points into plugin memory except the function pointers.
struct OpDef {
  std::string plugin;
  std::string name;
  std::string domain;
  std::vector<std::string> inputs, outputs;
  std::vector<AttributeSpec> attributes;
  std::vector<DType> dtypes;
  decltype(WeirOpDef::infer) infer = nullptr;
  decltype(WeirOpDef::create) create = nullptr;
  decltype(WeirOpDef::compute) compute = nullptr;
  decltype(WeirOpDef::destroy) destroy = nullptr;
  std::string doc;
  bool pure = false;
  DeviceType device = DeviceType::kCpu;
  std::shared_ptr<void> library;

  std::string label() const { return "plugin '" + plugin + "' op '" + name + "'"; }
  KernelOp kernel_op() const { return KernelOp(domain, name); }
};

// Attribute reads for the plugin: the node's value, else the schema default.
struct AttributeSource {
  const Node* node;
  const OpDef* def;
  const Attribute* find(const char* name) const {
    if (name == nullptr) return nullptr;
    if (node->has_attr(name)) return &node->attr(name);
    for (const AttributeSpec& spec : def->attributes) {
      if (spec.name == name && spec.default_value) return &*spec.default_value;
    }
    return nullptr;
  }
};

int32_t get_int(const void* opaque, const char* name, int64_t* value) {
  const Attribute* a = static_cast<const AttributeSource*>(opaque)->find(name);
  if (a == nullptr || a->type() != AttrType::kInt || value == nullptr) return WEIR_STATUS_ERROR;
  *value = a->i();
  return WEIR_STATUS_OK;
}

int32_t get_float(const void* opaque, const char* name, double* value) {
  const Attribute* a = static_cast<const AttributeSource*>(opaque)->find(name);
  if (a == nullptr || a->type() != AttrType::kFloat || value == nullptr) return WEIR_STATUS_ERROR;
  *value = a->f();
  return WEIR_STATUS_OK;
}

int32_t get_string(const void* opaque, const char* name, const char** value) {
  const Attribute* a = static_cast<const AttributeSource*>(opaque)->find(name);
  if (a == nullptr || a->type() != AttrType::kString || value == nullptr) return WEIR_STATUS_ERROR;
  *value = a->s().c_str();
  return WEIR_STATUS_OK;
}

WeirAttributes attributes_of(const AttributeSource& source) { return {&source, get_int, get_float, get_string}; }

WeirTensorType to_c(const TensorType& type) {
  WeirTensorType t{};
  t.dtype = static_cast<int32_t>(type.dtype);
  t.rank = type.shape.has_rank() && type.shape.rank() <= WEIR_PLUGIN_MAX_RANK ? static_cast<int32_t>(type.shape.rank()) : -1;
  for (int32_t i = 0; i < t.rank; ++i) {
    const Dim& d = type.shape[static_cast<size_t>(i)];
    t.sizes[i] = d.is_static() ? d.size() : -1;
  }
  return t;
}

void infer_with_plugin(const OpDef& def, InferenceContext& ctx) {
  std::vector<WeirTensorType> inputs(ctx.num_inputs());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType* type = ctx.input_type(i);
    inputs[i] = type != nullptr ? to_c(*type) : WeirTensorType{0, -1, {}};
  }
  if (def.infer == nullptr) {
    // Default: every output has input 0's type.
    if (const TensorType* first = ctx.input_type(0)) {
      for (size_t o = 0; o < ctx.num_outputs(); ++o) ctx.set_output_type(o, *first);
    }
    return;
  }
  std::vector<WeirTensorType> outputs(ctx.num_outputs(), WeirTensorType{0, -1, {}});
  AttributeSource source{&ctx.node(), &def};
  WeirAttributes attributes = attributes_of(source);
  WeirInferenceContext c{sizeof(WeirInferenceContext), static_cast<int32_t>(inputs.size()), inputs.data(),
                         static_cast<int32_t>(outputs.size()), outputs.data(), &attributes};
  ErrorBuffer error;
  if (def.infer(&c, error.text, kErrorBytes) != WEIR_STATUS_OK) ctx.fail(def.label() + ": " + error.message());
  for (size_t o = 0; o < outputs.size(); ++o) {
    const WeirTensorType& t = outputs[o];
    if (t.dtype != 0 && !known_dtype(t.dtype)) {
      ctx.fail(def.label() + ": shape inference gave output " + std::to_string(o) + " the unknown dtype code " +
               std::to_string(t.dtype));
    }
    if (t.rank > WEIR_PLUGIN_MAX_RANK) ctx.fail(def.label() + ": shape inference gave a rank over 8");
    TensorType type;
    type.dtype = static_cast<DType>(t.dtype);
    if (t.rank < 0) {
      type.shape = Shape::unknown_rank();
    } else {
      std::vector<Dim> dims;
      for (int32_t i = 0; i < t.rank; ++i) {
        dims.push_back(t.sizes[i] >= 0 ? Dim(t.sizes[i]) : Dim::symbol(ctx.node().name() + "_out" + std::to_string(o) + "_" + std::to_string(i)));
      }
      type.shape = Shape(dims);
    }
    ctx.set_output_type(o, type);
  }
}

class PluginKernel final : public OpKernel {
 public:
  PluginKernel(const Node& node, std::shared_ptr<const OpDef> def) : def_(std::move(def)), source_{&node, def_.get()} {
    if (def_->create != nullptr) {
      WeirAttributes attributes = attributes_of(source_);
      ErrorBuffer error;
      if (def_->create(&attributes, &state_, error.text, kErrorBytes) != WEIR_STATUS_OK) {
        throw Error(ErrorKind::kInvalidArgument, def_->label() + " could not create its kernel for node '" +
                                                     node.name() + "': " + error.message())
            .with_node(node.name());
      }
    }
  }
  ~PluginKernel() override {
    if (def_->destroy != nullptr) def_->destroy(state_);
  }
  PluginKernel(const PluginKernel&) = delete;
  PluginKernel& operator=(const PluginKernel&) = delete;

  void compute(KernelContext& ctx) override {
    struct Call {
      KernelContext* ctx;
      std::vector<std::vector<int64_t>> output_sizes;
      std::vector<WeirTensor> outputs;
      std::vector<bool> allocated;
      std::string error;
    } call{&ctx, std::vector<std::vector<int64_t>>(ctx.num_outputs()), std::vector<WeirTensor>(ctx.num_outputs()),
           std::vector<bool>(ctx.num_outputs(), false), {}};
    std::vector<WeirTensor> inputs(ctx.num_inputs());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!ctx.has_input(i)) {
        inputs[i] = {0, 0, nullptr, nullptr};
        continue;
      }
      const Tensor& t = ctx.input(i);
      inputs[i] = {static_cast<int32_t>(t.dtype()), static_cast<int32_t>(t.rank()), t.sizes().data(), t.raw_data()};
    }
    auto allocate = [](void* opaque, int32_t index, int32_t dtype, int32_t rank, const int64_t* sizes) -> const WeirTensor* {
      auto* c = static_cast<Call*>(opaque);
      try {
        if (index < 0 || static_cast<size_t>(index) >= c->outputs.size()) {
          throw Error(ErrorKind::kInvalidArgument, "output index " + std::to_string(index) + " is out of range");
        }
        if (!known_dtype(dtype) || rank < 0 || rank > WEIR_PLUGIN_MAX_RANK || (rank > 0 && sizes == nullptr)) {
          throw Error(ErrorKind::kInvalidArgument, "bad dtype, rank or sizes for output " + std::to_string(index));
        }
        std::vector<int64_t> dims(sizes, sizes + rank);
        for (int64_t d : dims) {
          if (d < 0) throw Error(ErrorKind::kInvalidArgument, "negative size for output " + std::to_string(index));
        }
        Tensor& t = c->ctx->allocate_output(static_cast<size_t>(index), static_cast<DType>(dtype), dims);
        c->output_sizes[static_cast<size_t>(index)] = t.sizes();
        c->outputs[static_cast<size_t>(index)] = {dtype, rank, c->output_sizes[static_cast<size_t>(index)].data(), t.raw_data()};
        c->allocated[static_cast<size_t>(index)] = true;
        return &c->outputs[static_cast<size_t>(index)];
      } catch (const std::exception& e) {
        if (c->error.empty()) c->error = e.what();
        return nullptr;
      }
    };
    WeirKernelContext c{sizeof(WeirKernelContext), static_cast<int32_t>(inputs.size()), inputs.data(),
                        static_cast<int32_t>(ctx.num_outputs()), allocate, &call,
                        ctx.stream() != nullptr ? ctx.stream()->native_handle() : nullptr};
    ErrorBuffer error;
    int32_t status = def_->compute(state_, &c, error.text, kErrorBytes);
    if (status != WEIR_STATUS_OK) {
      ctx.fail(def_->label() + " failed: " + error.message() + (call.error.empty() ? "" : " (" + call.error + ")"));
    }
    for (size_t o = 0; o < call.allocated.size(); ++o) {
      if (!call.allocated[o]) ctx.fail(def_->label() + " returned without writing output " + std::to_string(o));
    }
  }

 private:
  std::shared_ptr<const OpDef> def_;
  AttributeSource source_;
  void* state_ = nullptr;
};

// Copies and checks one op description.
std::shared_ptr<OpDef> read_op(const WeirOpDef& op, const std::string& plugin, const std::string& file,
                               const std::shared_ptr<void>& library) {
  auto fail = [&](const std::string& what) {
    return Error(ErrorKind::kInvalidArgument, "plugin '" + plugin + "': " + what).with_file(file);
  };
  if (op.struct_size < offsetof(WeirOpDef, destroy)) {
    throw fail("an op description is " + std::to_string(op.struct_size) + " bytes, smaller than ABI version " +
               std::to_string(WEIR_PLUGIN_ABI_VERSION) + " allows");
  }
  if (op.name == nullptr || op.name[0] == '\0') throw fail("an op has no name");
  auto def = std::make_shared<OpDef>();
  def->plugin = plugin;
  def->name = op.name;
  def->domain = op.domain != nullptr ? op.domain : "";
  def->library = library;
  auto names = [&](int32_t count, const char* const* list, std::vector<std::string>& out, const char* what) {
    if (count < 0 || count > 64 || (count > 0 && list == nullptr)) throw fail("op '" + def->name + "': bad " + what + " list");
    for (int32_t i = 0; i < count; ++i) {
      if (list[i] == nullptr) throw fail("op '" + def->name + "': " + what + " " + std::to_string(i) + " has no name");
      out.emplace_back(list[i]);
    }
  };
  names(op.num_inputs, op.input_names, def->inputs, "input");
  names(op.num_outputs, op.output_names, def->outputs, "output");
  if (def->outputs.empty()) throw fail("op '" + def->name + "' has no outputs");
  if (op.num_attributes < 0 || (op.num_attributes > 0 && op.attributes == nullptr)) {
    throw fail("op '" + def->name + "': bad attribute list");
  }
  for (int32_t i = 0; i < op.num_attributes; ++i) {
    const WeirAttrSpec& a = op.attributes[i];
    if (a.name == nullptr) throw fail("op '" + def->name + "': attribute " + std::to_string(i) + " has no name");
    AttributeSpec spec;
    spec.name = a.name;
    spec.required = a.required != 0;
    switch (a.type) {
      case WEIR_ATTR_INT: spec.type = AttrType::kInt; if (!spec.required) spec.default_value = Attribute(a.default_int); break;
      case WEIR_ATTR_FLOAT: spec.type = AttrType::kFloat; if (!spec.required) spec.default_value = Attribute(a.default_float); break;
      case WEIR_ATTR_STRING:
        spec.type = AttrType::kString;
        if (!spec.required) spec.default_value = Attribute(std::string(a.default_string != nullptr ? a.default_string : ""));
        break;
      default: throw fail("op '" + def->name + "': attribute '" + spec.name + "' has the unknown type " + std::to_string(a.type));
    }
    def->attributes.push_back(std::move(spec));
  }
  if (op.num_dtypes < 0 || (op.num_dtypes > 0 && op.dtypes == nullptr)) throw fail("op '" + def->name + "': bad dtype list");
  for (int32_t i = 0; i < op.num_dtypes; ++i) {
    if (!known_dtype(op.dtypes[i]) || op.dtypes[i] == 0) {
      throw fail("op '" + def->name + "': unknown dtype code " + std::to_string(op.dtypes[i]));
    }
    def->dtypes.push_back(static_cast<DType>(op.dtypes[i]));
  }
  if (def->dtypes.empty()) def->dtypes = {DType::kFloat32};
  if (op.compute == nullptr) throw fail("op '" + def->name + "' has no compute function");
  def->infer = op.infer;
  def->create = op.create;
  def->compute = op.compute;
  def->destroy = op.struct_size > offsetof(WeirOpDef, destroy) ? op.destroy : nullptr;
  def->doc = op.struct_size > offsetof(WeirOpDef, doc) && op.doc != nullptr ? op.doc : "";
  def->pure = op.struct_size > offsetof(WeirOpDef, flags) && (op.flags & WEIR_OP_FLAG_PURE) != 0;
  const int32_t device = op.struct_size > offsetof(WeirOpDef, device) ? op.device : WEIR_DEVICE_CPU;
  switch (device) {
    case WEIR_DEVICE_CPU: def->device = DeviceType::kCpu; break;
    case WEIR_DEVICE_CUDA: def->device = DeviceType::kCuda; break;
    default:
      throw fail("op '" + def->name + "': unknown device code " + std::to_string(device) + " (" +
                 std::to_string(WEIR_DEVICE_CPU) + ": CPU, " + std::to_string(WEIR_DEVICE_CUDA) + ": CUDA)");
  }
  return def;
}

}  // namespace

LoadedPlugin load_plugin(const std::filesystem::path& path, OpRegistry& ops, KernelRegistry& kernels) {
  const std::string file = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(ErrorKind::kIo, "no such plugin file").with_file(file);
  // dlopen of a truncated library maps pages past the end of the file, and
  // touching them is SIGBUS: the ELF ranges are checked first.
  if (std::string why = elf_library_problem(path); !why.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "cannot load the plugin: " + why).with_file(file);
  }
  // An absolute path: dlopen must not search the library path for it.
  std::string absolute = std::filesystem::absolute(path, ec).string();
  void* handle = ::dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = ::dlerror();
    throw Error(ErrorKind::kInvalidArgument, std::string("cannot load the plugin: ") + (reason != nullptr ? reason : "unknown reason"))
        .with_file(file);
  }
  std::shared_ptr<void> library(handle, [](void* h) { ::dlclose(h); });
  ::dlerror();
  void* symbol = ::dlsym(handle, WEIR_PLUGIN_ENTRY_SYMBOL);
  if (symbol == nullptr) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("not a Weir plugin: it does not export '") + WEIR_PLUGIN_ENTRY_SYMBOL + "'").with_file(file);
  }
  auto entry = reinterpret_cast<WeirPluginEntryFn>(symbol);
  const WeirPluginInfo* info = entry();
  if (info == nullptr) throw Error(ErrorKind::kInvalidArgument, "the plugin's entry returned nothing").with_file(file);
  if (info->abi_version != WEIR_PLUGIN_ABI_VERSION) {
    throw Error(ErrorKind::kInvalidArgument, "the plugin was built against plugin ABI version " +
                                                 std::to_string(info->abi_version) + "; this Weir speaks version " +
                                                 std::to_string(WEIR_PLUGIN_ABI_VERSION) + "; rebuild it against this Weir's weir/plugin.h")
        .with_file(file);
  }
  if (info->struct_size < sizeof(WeirPluginInfo) || info->num_ops < 0 || (info->num_ops > 0 && info->ops == nullptr)) {
    throw Error(ErrorKind::kInvalidArgument, "the plugin's description is malformed").with_file(file);
  }
  LoadedPlugin loaded;
  loaded.name = info->name != nullptr ? info->name : path.stem().string();
  loaded.library = library;
  // Read and check everything first, so a bad op registers nothing. An op
  // described again (for another device) adds a kernel to the first
  // description's op.
  std::vector<std::shared_ptr<OpDef>> defs;
  std::map<std::pair<std::string, std::string>, const OpDef*> first_of;
  std::set<std::tuple<std::string, std::string, DeviceType>> described;  // one description per op and device
  for (int32_t i = 0; i < info->num_ops; ++i) {
    defs.push_back(read_op(info->ops[i], loaded.name, file, library));
    const OpDef& def = *defs.back();
    auto refuse = [&](const std::string& why) {
      return Error(ErrorKind::kInvalidArgument, "plugin '" + loaded.name + "': op '" + def.kernel_op().to_string() +
                                                    "' " + why).with_file(file);
    };
    if (ops.find(def.name, def.domain) != nullptr) throw refuse("is already registered");
    if (!described.emplace(def.domain, def.name, def.device).second) {
      throw refuse("is described twice for the " + std::string(def.device == DeviceType::kCpu ? "CPU" : "CUDA"));
    }
    auto [first, inserted] = first_of.emplace(std::make_pair(def.domain, def.name), &def);
    if (inserted) continue;
    const OpDef& defined = *first->second;
    std::vector<std::string> attributes, defined_attributes;
    for (const AttributeSpec& spec : def.attributes) attributes.push_back(spec.name);
    for (const AttributeSpec& spec : defined.attributes) defined_attributes.push_back(spec.name);
    if (def.inputs != defined.inputs || def.outputs != defined.outputs || attributes != defined_attributes) {
      throw refuse("is described again for another device with other inputs, outputs or attributes than its "
                   "first description");
    }
  }
  for (const std::shared_ptr<OpDef>& def : defs) {
    std::shared_ptr<const OpDef> shared = def;
    auto kernel = [shared](const Node& node) { return std::make_unique<PluginKernel>(node, shared); };
    if (first_of.at({def->domain, def->name}) != def.get()) {  // another device's kernel for an op defined above
      kernels.add(def->kernel_op(), def->device, def->dtypes, kernel);
      continue;
    }
    OpSchema schema(def->name, def->domain);
    for (size_t i = 0; i < def->inputs.size(); ++i) schema.input(def->inputs[i], i == 0 ? "T" : "");
    for (const std::string& out : def->outputs) schema.output(out, "");
    schema.type_constraint("T", def->dtypes);
    for (const AttributeSpec& spec : def->attributes) {
      if (spec.required) {
        schema.required_attr(spec.name, spec.type);
      } else {
        schema.attr(spec.name, spec.type, spec.default_value);
      }
    }
    schema.infer([shared](InferenceContext& ctx) { infer_with_plugin(*shared, ctx); });
    schema.doc(def->doc.empty() ? def->label() : def->doc);
    // Unless the plugin vouches for purity, passes must not fold or merge it.
    if (!def->pure) schema.traits(OpTrait::kStateful);
    ops.add(std::move(schema));
    kernels.add(def->kernel_op(), def->device, def->dtypes, kernel);
    loaded.ops.push_back(def->name);
  }
  return loaded;
}

}  // namespace weir
