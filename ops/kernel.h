// Kernels: the code that computes an op on one device for one dtype.
//
// A kernel is created once per node (when a plan is built), reading the
// node's attributes and preparing whatever it can (oneDNN primitives, cuDNN
// descriptors); compute() then runs many times. The registry maps
// (domain, op type, device type, dtype) to a factory, so a plugin's
// "com.acme" Relu and Weir's own Relu are different kernels, and an op can
// have a CPU and a CUDA kernel. The dtype key is the dtype of the node's
// first present input, which is what selects the arithmetic.
//
//   registry.add("Relu", DeviceType::kCpu, {DType::kFloat32},        // Weir's own op (domain "")
//                [](const Node& node) { return std::make_unique<ReluKernel>(node); });
//   registry.add({"com.acme", "Gate"}, DeviceType::kCuda, {DType::kFloat32}, gate_factory);
//
//   std::unique_ptr<OpKernel> kernel = registry.create(node, DeviceType::kCpu);
//   KernelContext ctx(node, {x}, cpu_allocator());
//   kernel->compute(ctx);
//   Tensor y = ctx.output(0);
//
// Kernels allocate their outputs through the context, because output sizes
// with symbolic dims are only known at run time. They report bad input with
// ctx.fail(), which names the op and node.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/allocator.h"
#include "core/backend.h"

#include "core/communicator.h"
#include "core/stream.h"
#include "core/device.h"
#include "core/graph.h"
#include "core/tensor.h"

namespace weir {

class ParameterClient;

class KernelContext {
 public:
  // `inputs` follow the node's inputs; an undefined Tensor marks an absent optional input.
  KernelContext(const Node& node, std::vector<Tensor> inputs, Allocator& allocator);

  const Node& node() const { return node_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t index) const { return index < inputs_.size() && inputs_[index].defined(); }
  const Tensor& input(size_t index) const;

  enum class Fill { kZeros, kUninitialized };
  // Allocates output `index` and returns it: zero-filled (through the
  // backend, in stream order, when the runtime gave one), or left
  // uninitialized for a kernel that writes every element.
  Tensor& allocate_output(size_t index, DType dtype, std::vector<int64_t> sizes, Fill fill = Fill::kZeros);
  // Makes output `index` a tensor the kernel already has (a view, an input).
  void set_output(size_t index, Tensor tensor);
  size_t num_outputs() const { return outputs_.size(); }
  const Tensor& output(size_t index) const;
  std::vector<Tensor>& outputs() { return outputs_; }

  Allocator& allocator() const { return allocator_; }

  // The communicator of the rank this node runs as; nullptr outside a
  // runtime that provides one. Collective kernels need it, and pass each
  // call the runtime's collective timeout (zero: the communicator's default).
  Communicator* communicator() const { return communicator_; }
  std::chrono::milliseconds collective_timeout() const { return collective_timeout_; }
  void set_communicator(Communicator* communicator, std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
    communicator_ = communicator;
    collective_timeout_ = timeout;
  }

  // The parameter servers' client (core/parameter_client.h) of this worker;
  // nullptr outside a session given one. The parameter-server ops
  // (ops/ps/parameter_server_ops.h) call it.
  ParameterClient* parameter_client() const { return parameter_client_; }
  void set_parameter_client(ParameterClient* client) { parameter_client_ = client; }

  // The backend of the device this step runs on; nullptr outside a runtime
  // (then memory is host memory). Zero-filled outputs are filled through
  // it, in the step's stream order, and DeviceCopy copies through it.
  Backend* backend() const { return backend_; }
  void set_backend(Backend* backend) { backend_ = backend; }

  // The stream this step runs on; nullptr outside a runtime (a kernel run
  // directly by a test or the reference evaluator runs on the host, at once).
  // A kernel that enqueues device work enqueues it here; the runtime
  // completes the step by this stream's event, not by compute() returning.
  Stream* stream() const { return stream_; }
  void set_stream(Stream* stream) { stream_ = stream; }

  // The run's random stream: a runtime that owns RNG state (a Session) gives
  // every kernel of one run the same counter and advances it per run, so
  // random ops replay exactly from a saved state. Unset outside such a
  // runtime; random kernels then count their own runs.
  std::optional<uint64_t> rng_counter() const { return rng_counter_; }
  void set_rng_counter(uint64_t counter) { rng_counter_ = counter; }

  // Memory the runtime's memory planner set aside for output `index`:
  // allocate_output() places the output there when it fits. When `aliases_input`
  // (in-place execution) a zero-filled output is not placed there, because
  // zeroing would destroy the input the kernel is about to read.
  struct PlannedBuffer {
    void* data = nullptr;
    size_t bytes = 0;
    bool aliases_input = false;
    std::shared_ptr<void> keep_alive;
  };
  void set_planned_output(size_t index, PlannedBuffer buffer);

  // Throws weir::Error(kShape) "<op> '<node>': <message>", naming the node.
  [[noreturn]] void fail(const std::string& message) const;

  // A check of what this step's device work found (a Gather index out of
  // range, a label outside the classes), made once that work is done; it
  // throws as compute() does (fail_node). A runtime whose steps run ahead
  // of the device makes it after the run's device work, before run()
  // returns, so the step need not wait; one that waits for each step makes
  // it after the step. Without a runtime that takes checks, the step's
  // stream is synchronized and the check is made at once.
  using DeviceCheck = std::function<void()>;
  void check_when_done(DeviceCheck check);
  void set_device_checks(std::vector<DeviceCheck>* checks) { device_checks_ = checks; }

 private:
  const Node& node_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  Allocator& allocator_;
  Communicator* communicator_ = nullptr;
  ParameterClient* parameter_client_ = nullptr;
  std::chrono::milliseconds collective_timeout_{0};
  Backend* backend_ = nullptr;
  Stream* stream_ = nullptr;
  std::optional<uint64_t> rng_counter_;
  std::vector<PlannedBuffer> planned_;
  std::vector<DeviceCheck>* device_checks_ = nullptr;
};

// KernelContext::fail for code that no longer has the context (a device check).
[[noreturn]] void fail_node(const Node& node, const std::string& message);

// A constant input a kernel reordered into its library's own layout (oneDNN's
// blocked or Winograd weights), as a compiled plan file stores it.
struct PackedConstant {
  // The library's description of the layout, compared byte for byte and
  // never interpreted: a pack is used only where the kernel would choose
  // exactly this layout.
  std::string layout;
  Tensor data;  // u8, the packed bytes
  // Whether the bytes came from a plan file (adopt_packed_constants) rather
  // than being packed by this process.
  bool adopted = false;
};

// What packed constants depend on besides the problem: the library, its
// version and the instruction set it generates code for ("oneDNN 2.6.3
// avx512_core_bf16"). Packs made for another target are not used.
std::string packed_constant_target();

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void compute(KernelContext& ctx) = 0;

  // The constant inputs this kernel's runs so far packed (a plan file keeps
  // them, runtime/plan_file.h); empty for kernels that pack nothing.
  virtual std::vector<PackedConstant> packed_constants() const { return {}; }
  // Packs from a plan file: a later run that wants one's layout uses it as
  // it is, instead of packing the constant again (a pack no run wants is
  // never read).
  virtual void adopt_packed_constants(std::vector<PackedConstant> packs) { (void)packs; }
};

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const Node& node)>;

// An op as kernels are registered under it: its domain ("" for Weir's own
// and ONNX's ops) and type.
struct KernelOp {
  std::string domain;
  std::string type;

  KernelOp(const char* op_type) : type(op_type) {}  // NOLINT: Weir's own ops by name
  KernelOp(std::string op_type) : type(std::move(op_type)) {}  // NOLINT
  KernelOp(std::string op_domain, std::string op_type) : domain(std::move(op_domain)), type(std::move(op_type)) {}
  // "Relu", or "com.acme.Gate" for an op of another domain.
  std::string to_string() const { return domain.empty() ? type : domain + "." + type; }
};

class KernelRegistry {
 public:
  // Registers `factory` for each dtype; throws when a key is taken twice.
  void add(const KernelOp& op, DeviceType device, const std::vector<DType>& dtypes, KernelFactory factory);
  const KernelFactory* find(const KernelOp& op, DeviceType device, DType dtype) const;
  // Creates the kernel for `node` (its domain and op type) on `device`; throws
  // weir::Error(kUnsupported) naming the node, op, device and dtype when none
  // is registered.
  std::unique_ptr<OpKernel> create(const Node& node, DeviceType device) const;
  size_t size() const { return factories_.size(); }
  // The registry whose create() is running on this thread, else nullptr: a
  // kernel that creates its sub-graphs' kernels (If, Loop, Scan) creates
  // them from the registry it came from.
  static const KernelRegistry* creating();

 private:
  std::map<std::tuple<std::string, std::string, DeviceType, DType>, KernelFactory> factories_;
};

// The dtype that selects a node's kernel: that of its first present input,
// else of its first output.
DType kernel_dtype(const Node& node);

}  // namespace weir
