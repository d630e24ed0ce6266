#include "ops/cuda/instance_norm_kernels.h"

#include <memory>
#include <string>
#include <vector>

#include "core/shape.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/instance_norm_device.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/cuda/normalization_grad_outputs.h"
#include "ops/nn/normalization_kernels.h"
#include "ops/node_attributes.h"

namespace weir {

namespace {

// X [N, C, spatial...] is the CPU's plan: a group per (N, C) plane of `len` elements.
NormPlan planes_of(const KernelContext& ctx, const std::vector<int64_t>& sizes) {
  return normalization_plan(ctx, NormKind::kInstance, sizes);
}

// scale and B hold one value per channel in X's dtype, as on the CPU, and on the GPU.
void check_param(const KernelContext& ctx, const NormPlan& p, size_t index, const char* name) {
  check_normalization_param(ctx, p, index, name);
  cuda::require_on_device(ctx, ctx.input(index), name);
}

float epsilon_of(const Node& node) { return static_cast<float>(float_attr(node, "epsilon", 1e-5)); }

class InstanceNormCudaKernel final : public OpKernel {
 public:
  explicit InstanceNormCudaKernel(const Node& node) : epsilon_(epsilon_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const cuda::ElementType type = cuda::element_type(ctx, x.dtype());
    const NormPlan p = planes_of(ctx, x.sizes());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input");
    check_param(ctx, p, 1, "scale");
    const bool has_bias = ctx.has_input(2);
    if (has_bias) check_param(ctx, p, 2, "B");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_instance_norm(type, x.raw_data(), ctx.input(1).raw_data(), has_bias ? ctx.input(2).raw_data() : nullptr,
                               y.raw_data(), p.groups, p.channels, p.len, epsilon_, stream);
    cuda::check_launch(ctx, "instance_norm_planes");
  }

 private:
  float epsilon_;
};

// (dY, X, scale) -> (dX, dScale, dB), the statistics recomputed from X.
class InstanceNormGradCudaKernel final : public OpKernel {
 public:
  explicit InstanceNormGradCudaKernel(const Node& node) : epsilon_(epsilon_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& scale = ctx.input(2);
    if (dy.sizes() != x.sizes()) {
      ctx.fail("dY has shape " + format_sizes(dy.sizes()) + " but X has " + format_sizes(x.sizes()));
    }
    const cuda::ElementType type = cuda::element_type(ctx, x.dtype());
    const NormPlan p = planes_of(ctx, x.sizes());
    const cuda::NormalizationGradOutputs out = cuda::normalization_grad_outputs(ctx, dy, x, scale, p.channels);
    if (p.channels == 0) return;  // then every output is empty
    // Per-plane sums for the per-channel gradients.
    const cuda::LaunchScratch scratch(ctx, {cuda::instance_norm_grad_workspace_bytes(p.groups)});
    void* workspace = scratch.part(0);
    cuda::launch_instance_norm_grad(type, dy.raw_data(), x.raw_data(), scale.raw_data(), out.dx.raw_data(),
                                    out.dscale.raw_data(), out.dbias.raw_data(), p.groups, p.channels, p.len, epsilon_,
                                    workspace, out.stream);
    cuda::check_launch(ctx, "instance_norm_grad");
  }

 private:
  float epsilon_;
};

}  // namespace

void register_instance_norm_cuda_kernels(KernelRegistry& registry) {
  registry.add("InstanceNormalization", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<InstanceNormCudaKernel>(node); });
  registry.add("InstanceNormGrad", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<InstanceNormGradCudaKernel>(node); });
}

}  // namespace weir
