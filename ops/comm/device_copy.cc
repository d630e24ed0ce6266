#include "ops/comm/device_copy.h"

#include <cstring>
#include <memory>

#include "ops/dtype_sets.h"

namespace weir {

namespace {

// A copy into memory of the device the node runs on, through that device's
// backend in the step's stream order (the destination backend reads the
// host or its own device). Between virtual CPU devices memory is shared,
// but each has its own allocator (and statistics), so the copy lands in the
// destination's memory. Without a runtime (a test, the reference
// evaluator) it is a host memcpy.
class DeviceCopyKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (x.nbytes() == 0) return;
    if (ctx.backend() != nullptr && ctx.stream() != nullptr) {
      ctx.backend()->copy(x, y, *ctx.stream());
      return;
    }
    if (x.device().type != DeviceType::kCpu || y.device().type != DeviceType::kCpu) {
      ctx.fail("copying " + x.device().to_string() + " to " + y.device().to_string() + " needs the device's backend");
    }
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
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
               [](const Node&) { return std::make_unique<DeviceCopyKernel>(); });
}

}  // namespace weir
