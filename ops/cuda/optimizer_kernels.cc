#include "ops/cuda/optimizer_kernels.h"

#include <string>
#include <vector>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/cuda/optimizer_device.h"
#include "ops/node_attributes.h"
#include "ops/optimizer/optimizer_kernels.h"

namespace weir {

namespace {

using cuda::UpdateRule;

class UpdateCudaKernel final : public OpKernel {
 public:
  UpdateCudaKernel(const Node& node, UpdateRule rule) : rule_(rule) {
    hyper_.weight_decay = float_attr(node, "weight_decay", 0.0);
    hyper_.momentum = float_attr(node, "momentum", 0.9);
    hyper_.nesterov = node.has_attr("nesterov") && node.attr("nesterov").i() != 0;
    hyper_.beta1 = float_attr(node, "beta1", 0.9);
    hyper_.beta2 = float_attr(node, "beta2", 0.999);
    hyper_.epsilon = float_attr(node, "epsilon", rule == UpdateRule::kLamb || rule == UpdateRule::kAdagrad ? 1e-6 : 1e-8);
  }

  void compute(KernelContext& ctx) override {
    const size_t num_state = rule_ == UpdateRule::kSgd ? 0
                             : (rule_ == UpdateRule::kMomentum || rule_ == UpdateRule::kAdagrad ? 1 : 2);
    const Tensor& param = ctx.input(0);
    if (param.dtype() != DType::kFloat32) ctx.fail("the CUDA kernel takes f32 parameters, got " + param.type_string());
    check_update_inputs(ctx, num_state);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    for (size_t i = 0; i < 2 + num_state; ++i) cuda::require_on_device(ctx, ctx.input(i), ("input " + std::to_string(i)).c_str());
    const size_t skip_index = update_skip_index(num_state);
    const bool* skip = nullptr;
    if (ctx.num_inputs() > skip_index && ctx.has_input(skip_index)) {
      const Tensor& flag = ctx.input(skip_index);
      check_skip_flag(ctx, flag);
      cuda::require_on_device(ctx, flag, "skip");
      skip = flag.data<bool>();
    }
    const cuda::DeviceScalar lr = cuda::device_scalar(ctx, 2 + num_state, "lr");
    const cuda::DeviceScalar step = num_state == 2 ? cuda::device_scalar(ctx, 5, "step") : cuda::DeviceScalar{};

    cuda::ParameterRefs refs;
    refs.param = param.data<float>();
    refs.grad = ctx.input(1).data<float>();
    refs.state0 = num_state > 0 ? ctx.input(2).data<float>() : nullptr;
    refs.state1 = num_state > 1 ? ctx.input(3).data<float>() : nullptr;
    refs.count = param.num_elements();
    if (refs.count > 0) {
      const cuda::LaunchScratch workspace(ctx, {cuda::update_workspace_doubles(rule_, &refs, 1) * sizeof(double)});
      cuda::launch_update(rule_, hyper_, &refs, 1, lr, step, skip, workspace.part<double>(0), stream);
      cuda::check_launch(ctx, "optimizer update");
    }
    // Outputs alias the updated inputs.
    ctx.set_output(0, param);
    for (size_t i = 0; i < num_state && i + 1 < ctx.num_outputs(); ++i) ctx.set_output(1 + i, ctx.input(2 + i));
  }

 private:
  UpdateRule rule_;
  cuda::UpdateHyperparameters hyper_;
};

class ClipByGlobalNormCudaKernel final : public OpKernel {
 public:
  explicit ClipByGlobalNormCudaKernel(const Node& node) : max_norm_(node.attr("max_norm").f()) {}

  void compute(KernelContext& ctx) override {
    if (ctx.num_outputs() != ctx.num_inputs() + 1) ctx.fail("needs one output per gradient plus the norm");
    const DType dtype = ctx.input(0).dtype();
    if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBFloat16) {
      ctx.fail("gradient 0 is " + ctx.input(0).type_string() + "; the CUDA kernel takes f32, f16 or bf16");
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    std::vector<const void*> grads;
    std::vector<void*> outs;
    std::vector<int64_t> counts;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& grad = ctx.input(i);
      if (grad.dtype() != dtype) {
        ctx.fail("gradient " + std::to_string(i) + " is " + grad.type_string() + "; gradient 0 is " + ctx.input(0).type_string());
      }
      cuda::require_on_device(ctx, grad, ("gradient " + std::to_string(i)).c_str());
      Tensor& out = ctx.allocate_output(i, dtype, grad.sizes(), KernelContext::Fill::kUninitialized);
      grads.push_back(grad.raw_data());
      outs.push_back(out.raw_data());
      counts.push_back(grad.num_elements());
    }
    // The norm has the gradients' type (the schema's outputs share T).
    Tensor& norm = ctx.allocate_output(ctx.num_inputs(), dtype, {}, KernelContext::Fill::kUninitialized);
    const int num = static_cast<int>(counts.size());
    const cuda::LaunchScratch workspace(ctx, {cuda::clip_workspace_doubles(counts.data(), num) * sizeof(double)});
    cuda::launch_clip_by_global_norm(cuda::checked_element_type(dtype), grads.data(), outs.data(), counts.data(), num,
                                     max_norm_, norm.raw_data(), workspace.part<double>(0), stream);
    cuda::check_launch(ctx, "clip_by_global_norm");
  }

 private:
  double max_norm_;
};

// Assign(target, value): target's memory gets value's bytes, in stream order.
class AssignCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& target = ctx.input(0);
    const Tensor& value = ctx.input(1);
    check_assign(ctx, target, value);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, target, "target");
    cuda::require_on_device(ctx, value, "value");
    if (target.raw_data() != value.raw_data() && value.nbytes() > 0) {
      cuda::check_cuda_status(
          ctx, cudaMemcpyAsync(target.raw_data(), value.raw_data(), value.nbytes(), cudaMemcpyDeviceToDevice, stream),
          "copying the value into the target");
    }
    ctx.set_output(0, target);
  }
};

}  // namespace

void register_optimizer_cuda_kernels(KernelRegistry& registry) {
  auto add = [&](const char* op, UpdateRule rule) {
    registry.add(op, DeviceType::kCuda, {DType::kFloat32},
                 [rule](const Node& node) { return std::make_unique<UpdateCudaKernel>(node, rule); });
  };
  add("SGD", UpdateRule::kSgd);
  add("Momentum", UpdateRule::kMomentum);
  add("Adagrad", UpdateRule::kAdagrad);
  add("Adam", UpdateRule::kAdam);
  add("AdamW", UpdateRule::kAdamW);
  add("LAMB", UpdateRule::kLamb);
  registry.add("Assign", DeviceType::kCuda, {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16},
               [](const Node&) { return std::make_unique<AssignCudaKernel>(); });
  registry.add("ClipByGlobalNorm", DeviceType::kCuda, {DType::kFloat32, DType::kFloat16, DType::kBFloat16},
               [](const Node& node) { return std::make_unique<ClipByGlobalNormCudaKernel>(node); });
}

}  // namespace weir
