#include "ops/cuda/loss_scaling_kernels.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/loss_scaling_device.h"
#include "ops/node_attributes.h"

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
  explicit UpdateLossScaleCudaKernel(const Node& node) {
    schedule_.growth_factor = float_attr(node, "growth_factor", 2.0);
    schedule_.backoff_factor = float_attr(node, "backoff_factor", 0.5);
    schedule_.growth_interval = int_attr(node, "growth_interval", 2000);
    schedule_.min_scale = float_attr(node, "min_scale", 1.0);
    schedule_.max_scale = float_attr(node, "max_scale", 16777216.0);
    if (schedule_.growth_interval < 1) {
      throw Error(ErrorKind::kInvalidArgument, "UpdateLossScale '" + node.name() + "': growth_interval must be at least 1");
    }
  }

  void compute(KernelContext& ctx) override {
    const Tensor& scale = ctx.input(0);
    const Tensor& good = ctx.input(1);
    if (scale.dtype() != DType::kFloat32 || scale.num_elements() != 1) ctx.fail("scale must be an f32 scalar, got " + scale.type_string());
    if (good.dtype() != DType::kInt64 || good.num_elements() != 1) ctx.fail("good_steps must be an i64 scalar, got " + good.type_string());
    const Tensor& found_inf = ctx.input(2);
    if (found_inf.dtype() != DType::kBool || found_inf.num_elements() != 1) {
      ctx.fail("found_inf must be a bool scalar, got " + found_inf.type_string());
    }
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
  cuda::LossScaleSchedule schedule_;
};

}  // namespace

void register_loss_scaling_cuda_kernels(KernelRegistry& registry) {
  registry.add("UnscaleGradients", DeviceType::kCuda, {DType::kFloat32},
               [](const Node&) { return std::make_unique<UnscaleGradientsCudaKernel>(); });
  registry.add("UpdateLossScale", DeviceType::kCuda, {DType::kFloat32},
               [](const Node& node) { return std::make_unique<UpdateLossScaleCudaKernel>(node); });
}

}  // namespace weir
