#include "ops/comm/device_copy.h"

#include <cstring>
#include <memory>

#include "ops/dtype_sets.h"

namespace weir {

namespace {

// Host to host: virtual CPU devices share memory, but each has its own
// allocator (and statistics), so the copy lands in the destination's memory.
class HostCopyKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.device().type != DeviceType::kCpu) ctx.fail("the CPU DeviceCopy kernel got a tensor on " + x.device().to_string());
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (x.nbytes() > 0) std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
  }
};

}  // namespace

void register_device_copy_schema(OpRegistry& registry) {
  OpSchema copy("DeviceCopy");
  copy.input("X", "T").output("Y", "T").type_constraint("T", kAnyDTypes)
      .infer([](InferenceContext& ctx) {
        if (const TensorType* x = ctx.input_type(0)) ctx.set_output_type(0, *x);
      })
      .gradient([](GradientContext& ctx) {
        // The gradient flows back to the source device: the runtime places
        // this backward copy where the forward input lives.
        if (Value* grad = ctx.output_grad(0)) ctx.set_input_grad(0, ctx.emit("DeviceCopy", {grad})[0]);
      })
      .doc("a copy of X on the device this node runs on; inserted by the runtime where a value crosses devices");
  registry.add(std::move(copy));
}

void register_device_copy_cpu_kernel(KernelRegistry& registry) {
  registry.add("DeviceCopy", DeviceType::kCpu, kAnyDTypes,
               [](const Node&) { return std::make_unique<HostCopyKernel>(); });
}

}  // namespace weir
