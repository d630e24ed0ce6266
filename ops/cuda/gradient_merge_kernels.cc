#include "ops/cuda/gradient_merge_kernels.h"

#include <memory>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/gradient_merge_device.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/gradient_merge.h"

namespace weir {

namespace {

class GradientMergeCudaKernel final : public OpKernel {
 public:
  explicit GradientMergeCudaKernel(const Node& node) : scale_(static_cast<float>(float_attr(node, "scale", 1.0))) {}

  void compute(KernelContext& ctx) override {
    check_gradient_merge_inputs(ctx);
    const Tensor& accumulator = ctx.input(0);
    const Tensor& grad = ctx.input(1);
    const Tensor& apply = ctx.input(2);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, accumulator, "accumulator");
    cuda::require_on_device(ctx, grad, "grad");
    cuda::require_on_device(ctx, apply, "apply");
    Tensor& merged = ctx.allocate_output(0, DType::kFloat32, grad.sizes(), KernelContext::Fill::kUninitialized);
    if (grad.num_elements() == 0) return;
    cuda::launch_gradient_merge(accumulator.data<float>(), grad.data<float>(), merged.data<float>(), grad.num_elements(),
                                apply.data<bool>(), scale_, stream);
    cuda::check_launch(ctx, "gradient_merge");
  }

 private:
  float scale_;
};

}  // namespace

void register_gradient_merge_cuda_kernels(KernelRegistry& registry) {
  registry.add("GradientMerge", DeviceType::kCuda, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<GradientMergeCudaKernel>(node); });
}

}  // namespace weir
