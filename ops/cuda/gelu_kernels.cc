#include "ops/cuda/gelu_kernels.h"

#include <memory>
#include <string>
#include <vector>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/gelu_device.h"
#include "ops/elementwise/activation_functions.h"
#include "ops/elementwise/activation_kernels.h"

namespace weir {

namespace {

// The CPU's GeluFunction reads (and checks) the approximate attribute.
cuda::GeluForm form_of(const Node& node) { return GeluFunction(node).tanh_form ? cuda::GeluForm::kTanh : cuda::GeluForm::kErf; }

class GeluCudaKernel final : public OpKernel {
 public:
  explicit GeluCudaKernel(const Node& node) : form_(form_of(node)), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    check_activation_dtype(ctx, x, dtype_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    Tensor& y = ctx.allocate_output(0, dtype_, x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_gelu(form_, cuda::element_type(ctx, dtype_), x.raw_data(), y.raw_data(), y.num_elements(), stream);
    cuda::check_launch(ctx, "gelu_elements");
  }

 private:
  cuda::GeluForm form_;
  DType dtype_;
};

class GeluGradCudaKernel final : public OpKernel {
 public:
  explicit GeluGradCudaKernel(const Node& node) : form_(form_of(node)), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    check_activation_grad(ctx, dy, x, dtype_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, x, "X");
    Tensor& dx = ctx.allocate_output(0, dtype_, x.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    cuda::launch_gelu_grad(form_, cuda::element_type(ctx, dtype_), dy.raw_data(), x.raw_data(), dx.raw_data(),
                           dx.num_elements(), stream);
    cuda::check_launch(ctx, "gelu_grad_elements");
  }

 private:
  cuda::GeluForm form_;
  DType dtype_;
};

}  // namespace

void register_gelu_cuda_kernels(KernelRegistry& registry) {
  registry.add("Gelu", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<GeluCudaKernel>(node); });
  registry.add("GeluGrad", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<GeluGradCudaKernel>(node); });
}

}  // namespace weir
