#include "ops/comm/device_copy.h"

#include <cstring>
#include <memory>

#include "core/backend.h"
#include "ops/dtype_sets.h"

namespace weir {

namespace {

// A copy into memory of the device the node runs on, through that device's
// backend in the step's stream order (the destination backend reads the
// host or its own device). Between virtual CPU devices memory is shared,
// but each has its own allocator (and statistics), so the copy lands in the
// destination's memory. With to_host the node runs on the source's device
// and the copy lands in that backend's host memory. Without a runtime (a
// test, the reference evaluator) it is a host memcpy.
class DeviceCopyKernel final : public OpKernel {
 public:
  explicit DeviceCopyKernel(const Node& node) : to_host_(copies_to_host(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Backend* backend = ctx.backend() != nullptr && ctx.stream() != nullptr ? ctx.backend() : nullptr;
    if (to_host_) {
      Allocator& host = backend != nullptr ? backend->host_allocator() : cpu_allocator();
      ctx.set_output(0, Tensor::uninitialized(x.dtype(), x.sizes(), host));
    } else {
      ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    }
    Tensor y = ctx.output(0);
    if (x.nbytes() == 0) return;
    if (backend != nullptr) {
      backend->copy(x, y, *ctx.stream());
      // A device that runs ahead may still be reading a host source after
      // compute() returns (CUDA stages pageable memory before it returns,
      // but reads pinned memory later): it stays alive until the work is
      // done. Device memory is the runtime's to keep from reuse, and a copy
      // to the host is waited for by its host readers.
      if (!to_host_ && ctx.stream()->runs_ahead() && x.device().type == DeviceType::kCpu) {
        ctx.check_when_done([x] {});
      }
      return;
    }
    if (x.device().type != DeviceType::kCpu || y.device().type != DeviceType::kCpu) {
      ctx.fail("copying " + x.device().to_string() + " to " + y.device().to_string() + " needs the device's backend");
    }
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
  }

 private:
  bool to_host_;
};

}  // namespace

void register_device_copy_schema(OpRegistry& registry) {
  OpSchema copy("DeviceCopy");
  copy.input("X", "T").output("Y", "T").type_constraint("T", kAnyDTypes)
      .attr("to_host", AttrType::kInt, Attribute(int64_t{0}))
      .infer([](InferenceContext& ctx) {
        if (const TensorType* x = ctx.input_type(0)) ctx.set_output_type(0, *x);
      })
      .gradient([](GradientContext& ctx) {
        // The gradient flows back to the source device: the runtime places
        // this backward copy where the forward input lives. (Copies are
        // placed after differentiation, so to_host never reaches here.)
        if (Value* grad = ctx.output_grad(0)) ctx.set_input_grad(0, ctx.emit("DeviceCopy", {grad})[0]);
      })
      .doc("a copy of X on the device this node runs on; inserted by the runtime where a value crosses devices");
  registry.add(std::move(copy));
}

void register_device_copy_kernels(KernelRegistry& registry) {
  for (DeviceType device : {DeviceType::kCpu, DeviceType::kCuda}) {
    registry.add("DeviceCopy", device, kAnyDTypes, [](const Node& node) { return std::make_unique<DeviceCopyKernel>(node); });
  }
}

bool copies_to_host(const Node& node) {
  return node.op_type() == "DeviceCopy" && node.domain().empty() && node.has_attr("to_host") &&
         node.attr("to_host").i() != 0;
}

}  // namespace weir
