#include "ops/kernel.h"

#include <cstring>

#include "core/error.h"

namespace weir {

KernelContext::KernelContext(const Node& node, std::vector<Tensor> inputs, Allocator& allocator)
    : node_(node), inputs_(std::move(inputs)), outputs_(node.num_outputs()), allocator_(allocator) {}

const Tensor& KernelContext::input(size_t index) const {
  if (!has_input(index)) fail("input " + std::to_string(index) + " is absent");
  return inputs_[index];
}

void KernelContext::set_planned_output(size_t index, PlannedBuffer buffer) {
  if (planned_.size() <= index) planned_.resize(index + 1);
  planned_[index] = std::move(buffer);
}

Tensor& KernelContext::allocate_output(size_t index, DType dtype, std::vector<int64_t> sizes, Fill fill) {
  if (index >= outputs_.size()) fail("kernel wrote output " + std::to_string(index) + " of " + std::to_string(outputs_.size()));
  const bool host = allocator_.device().type == DeviceType::kCpu;
  // Zeros on a device need its backend and the step's stream.
  const bool backend_fills = backend_ != nullptr && stream_ != nullptr;
  auto zero = [&](Tensor& tensor) {
    if (tensor.nbytes() == 0) return;
    if (backend_fills) {
      backend_->fill_zero(tensor, *stream_);  // in stream order: the kernel's work follows it
    } else if (host) {
      std::memset(tensor.raw_data(), 0, tensor.nbytes());
    } else {
      fail("cannot zero an output on " + allocator_.device().to_string() + " without the device's backend");
    }
  };
  if (index < planned_.size() && planned_[index].data != nullptr) {
    const PlannedBuffer& planned = planned_[index];
    Tensor header = Tensor::wrap(dtype, sizes, planned.data, allocator_.device(), planned.keep_alive);
    bool fits = header.nbytes() <= planned.bytes && header.nbytes() > 0;
    if (fits && (fill == Fill::kUninitialized || !planned.aliases_input)) {
      if (fill == Fill::kZeros) zero(header);
      outputs_[index] = std::move(header);
      return outputs_[index];
    }
  }
  outputs_[index] = Tensor::uninitialized(dtype, std::move(sizes), allocator_);
  if (fill == Fill::kZeros) zero(outputs_[index]);
  return outputs_[index];
}

void KernelContext::set_output(size_t index, Tensor tensor) {
  if (index >= outputs_.size()) fail("kernel wrote output " + std::to_string(index) + " of " + std::to_string(outputs_.size()));
  outputs_[index] = std::move(tensor);
}

const Tensor& KernelContext::output(size_t index) const {
  if (index >= outputs_.size()) fail("output " + std::to_string(index) + " does not exist");
  return outputs_[index];
}

void KernelContext::fail(const std::string& message) const { fail_node(node_, message); }

void fail_node(const Node& node, const std::string& message) {
  throw Error(ErrorKind::kShape, node.op_type() + " '" + node.name() + "': " + message).with_node(node.name());
}

void KernelContext::check_when_done(DeviceCheck check) {
  if (device_checks_ != nullptr) {
    device_checks_->push_back(std::move(check));
    return;
  }
  if (stream_ != nullptr) {
    stream_->record()->synchronize(std::chrono::minutes(1),
                                   node_.op_type() + " '" + node_.name() + "' finishing the work its check reads");
  }
  check();
}

namespace {

const char* device_label(DeviceType device) { return device == DeviceType::kCpu ? "CPU" : "CUDA"; }

thread_local const KernelRegistry* creating_registry = nullptr;

}  // namespace

void KernelRegistry::add(const KernelOp& op, DeviceType device, const std::vector<DType>& dtypes,
                         KernelFactory factory) {
  // Check every key first, so a refused registration adds nothing.
  for (DType dtype : dtypes) {
    if (find(op, device, dtype) != nullptr) {
      throw Error(ErrorKind::kInternal, std::string(device_label(device)) + " kernel for " + op.to_string() + " (" +
                                            std::string(dtype_name(dtype)) + ") is registered twice");
    }
  }
  for (DType dtype : dtypes) factories_.emplace(std::make_tuple(op.domain, op.type, device, dtype), factory);
}

const KernelFactory* KernelRegistry::find(const KernelOp& op, DeviceType device, DType dtype) const {
  auto it = factories_.find(std::make_tuple(op.domain, op.type, device, dtype));
  return it == factories_.end() ? nullptr : &it->second;
}

std::unique_ptr<OpKernel> KernelRegistry::create(const Node& node, DeviceType device) const {
  DType dtype = kernel_dtype(node);
  KernelOp op(node.domain(), node.op_type());
  const KernelFactory* factory = find(op, device, dtype);
  if (factory == nullptr) {
    throw Error(ErrorKind::kUnsupported, "no " + std::string(device_label(device)) + " kernel for " + op.to_string() +
                                             " with " + std::string(dtype_name(dtype)) + " inputs")
        .with_node(node.name());
  }
  struct Creating {
    const KernelRegistry* previous = creating_registry;
    explicit Creating(const KernelRegistry* registry) { creating_registry = registry; }
    ~Creating() { creating_registry = previous; }
  } scope(this);
  return (*factory)(node);
}

const KernelRegistry* KernelRegistry::creating() { return creating_registry; }

DType kernel_dtype(const Node& node) {
  for (const Value* input : node.inputs()) {
    if (input != nullptr && input->dtype() != DType::kUndefined) return input->dtype();
  }
  return node.num_outputs() > 0 ? node.output(0)->dtype() : DType::kUndefined;
}

}  // namespace weir
