#include "ops/cuda/softmax_grad_kernels.h"

#include "ops/axis_lines.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/softmax_grad_device.h"
#include "ops/nn/softmax_kernels.h"
#include "ops/node_attributes.h"

namespace weir {

namespace {

class SoftmaxGradCudaKernel final : public OpKernel {
 public:
  SoftmaxGradCudaKernel(const Node& node, bool log) : axis_(int_attr(node, "axis", -1)), log_(log) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& y = ctx.input(1);
    AxisSplit split = softmax_grad_split(ctx, dy, y, axis_);
    const cuda::ElementType type = cuda::element_type(ctx, y.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, y, "Y");
    Tensor& dx = ctx.allocate_output(0, y.dtype(), y.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    cuda::launch_softmax_grad(log_, type, dy.raw_data(), y.raw_data(), dx.raw_data(), split.outer, split.n, split.inner,
                              stream);
    cuda::check_launch(ctx, log_ ? "log_softmax_grad" : "softmax_grad");
  }

 private:
  int64_t axis_;
  bool log_;
};

}  // namespace

void register_softmax_grad_cuda_kernels(KernelRegistry& registry) {
  registry.add("SoftmaxGrad", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<SoftmaxGradCudaKernel>(node, /*log=*/false); });
  registry.add("LogSoftmaxGrad", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<SoftmaxGradCudaKernel>(node, /*log=*/true); });
}

}  // namespace weir
