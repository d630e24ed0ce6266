#include "ops/cuda/fused_elementwise_kernels.h"

#include <string>

#include "core/error.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/fused_elementwise_device.h"
#include "ops/elementwise/fused_elementwise.h"

namespace weir {

namespace {

using cuda::FusedProgram;

cuda::FusedCode device_code(FusedStepOp op) {
  // FusedCode lists the ops in FusedStepOp's order.
  static_assert(static_cast<int>(FusedStepOp::kMin) == static_cast<int>(cuda::FusedCode::kMin));
  static_assert(static_cast<int>(FusedStepOp::kAdd) == static_cast<int>(cuda::FusedCode::kAdd));
  return static_cast<cuda::FusedCode>(static_cast<int>(op));
}

class FusedElementwiseCudaKernel final : public OpKernel {
 public:
  explicit FusedElementwiseCudaKernel(const Node& node) {
    const std::vector<FusedStep> steps = parse_fused_program(node, node.num_inputs());
    if (node.num_inputs() > static_cast<size_t>(FusedProgram::kMaxInputs) ||
        steps.size() > static_cast<size_t>(FusedProgram::kMaxSteps)) {
      throw Error(ErrorKind::kUnsupported, "FusedElementwise '" + node.name() + "': the CUDA kernel takes at most " +
                                               std::to_string(FusedProgram::kMaxInputs) + " inputs and " +
                                               std::to_string(FusedProgram::kMaxSteps) + " steps, this program has " +
                                               std::to_string(node.num_inputs()) + " inputs and " +
                                               std::to_string(steps.size()) + " steps")
          .with_node(node.name());
    }
    program_.inputs = static_cast<int>(node.num_inputs());
    program_.steps = static_cast<int>(steps.size());
    for (size_t s = 0; s < steps.size(); ++s) {
      program_.op[s] = device_code(steps[s].op);
      program_.a[s] = static_cast<uint8_t>(steps[s].a);
      program_.b[s] = static_cast<uint8_t>(steps[s].b);
    }
  }

  void compute(KernelContext& ctx) override {
    const std::vector<int64_t> sizes = fused_elementwise_output_sizes(ctx);
    const DType dtype = ctx.input(0).dtype();
    if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
      ctx.fail("needs f32 or f64, not " + std::string(dtype_name(dtype)));
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) cuda::require_on_device(ctx, ctx.input(i), "an input");
    Tensor& y = ctx.allocate_output(0, dtype, sizes, KernelContext::Fill::kUninitialized);
    const int64_t total = y.num_elements();
    if (total == 0) return;
    FusedProgram program = program_;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      program.data[i] = ctx.input(i).raw_data();
      program.scalar[i] = ctx.input(i).num_elements() == 1 && total != 1;
    }
    cuda::launch_fused_elementwise(dtype == DType::kFloat64 ? cuda::FusedType::kFloat64 : cuda::FusedType::kFloat32,
                                   program, y.raw_data(), total, stream);
    cuda::check_launch(ctx, "fused_elementwise_kernel");
  }

 private:
  FusedProgram program_;
};

}  // namespace

void register_fused_elementwise_cuda_kernel(KernelRegistry& registry) {
  registry.add("FusedElementwise", DeviceType::kCuda, {DType::kFloat32, DType::kFloat64},
               [](const Node& node) { return std::make_unique<FusedElementwiseCudaKernel>(node); });
}

}  // namespace weir
