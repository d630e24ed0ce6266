#include "ops/cuda/loss_scaling_kernels.h"

#include <string>
#include <vector>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/loss_scaling_device.h"
#include "ops/optimizer/loss_scaling.h"

namespace weir {

namespace {

class UnscaleGradientsCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    if (ctx.num_outputs() != ctx.num_inputs()) ctx.fail("needs the found_inf output plus one output per gradient");
    const Tensor& scale = ctx.input(0);
    if (scale.dtype() != DType::kFloat32 || scale.num_elements() != 1) {
      ctx.fail("scale must be an f32 scalar, got " + scale.type_string());
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, scale, "scale");
    const DType dtype = ctx.num_inputs() > 1 ? ctx.input(1).dtype() : DType::kFloat32;
    cuda::ElementType type = cuda::ElementType::kFloat32;
    switch (dtype) {
      case DType::kFloat32: break;
      case DType::kFloat16: type = cuda::ElementType::kFloat16; break;
      case DType::kBFloat16: type = cuda::ElementType::kBFloat16; break;
      default: ctx.fail("gradient 0 is " + ctx.input(1).type_string() + "; the CUDA kernel takes f32, f16 or bf16");
    }
    std::vector<const void*> grads;
    std::vector<void*> outs;
    std::vector<int64_t> counts;
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      const Tensor& grad = ctx.input(i);
      if (grad.dtype() != dtype) {
        ctx.fail("gradient " + std::to_string(i - 1) + " is " + grad.type_string() + "; gradient 0 is " +
                 ctx.input(1).type_string());
      }
      cuda::require_on_device(ctx, grad, ("gradient " + std::to_string(i - 1)).c_str());
      Tensor& out = ctx.allocate_output(i, dtype, grad.sizes(), KernelContext::Fill::kUninitialized);
      grads.push_back(grad.raw_data());
      outs.push_back(out.raw_data());
      counts.push_back(grad.num_elements());
    }
    // Written by the first kernel, before any gradient is looked at.
    Tensor& found_inf = ctx.allocate_output(0, DType::kBool, {}, KernelContext::Fill::kUninitialized);
    cuda::launch_unscale_gradients(type, scale.data<float>(), grads.data(), outs.data(), counts.data(),
                                   static_cast<int>(counts.size()), found_inf.data<bool>(), stream);
    cuda::check_launch(ctx, "unscale_gradients");
  }
};

class UpdateLossScaleCudaKernel final : public OpKernel {
 public:
  explicit UpdateLossScaleCudaKernel(const Node& node) : schedule_(loss_scale_schedule(node)) {}

  void compute(KernelContext& ctx) override {
    check_loss_scale_inputs(ctx);
    const Tensor& scale = ctx.input(0);
    const Tensor& good = ctx.input(1);
    const Tensor& found_inf = ctx.input(2);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, scale, "scale");
    cuda::require_on_device(ctx, good, "good_steps");
    cuda::require_on_device(ctx, found_inf, "found_inf");
    cuda::launch_update_loss_scale(schedule_, scale.data<float>(), good.data<int64_t>(), found_inf.data<bool>(), stream);
    cuda::check_launch(ctx, "update_loss_scale");
    ctx.set_output(0, scale);
    if (ctx.num_outputs() > 1) ctx.set_output(1, good);
  }

 private:
  LossScaleSchedule schedule_;
};

}  // namespace

void register_loss_scaling_cuda_kernels(KernelRegistry& registry) {
  registry.add("UnscaleGradients", DeviceType::kCuda, {DType::kFloat32},
               [](const Node&) { return std::make_unique<UnscaleGradientsCudaKernel>(); });
  registry.add("UpdateLossScale", DeviceType::kCuda, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<UpdateLossScaleCudaKernel>(node); });
}

}  // namespace weir
