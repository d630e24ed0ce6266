#include "ops/cuda/elementwise_grad_kernels.h"

#include <string>

#include "ops/cuda/activation_params.h"
#include "ops/cuda/broadcast_indexing.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/elementwise_device.h"
#include "ops/cuda/elementwise_grad_device.h"
#include "ops/elementwise/activation_kernels.h"
#include "ops/elementwise/prelu.h"

namespace weir {

namespace {

using cuda::BinaryOp;
using cuda::ElementType;
using cuda::UnaryOp;

// ReluGrad(dY, X), SigmoidGrad(dY, Y), TanhGrad(dY, Y): same-shape operands.
class SavedGradCudaKernel final : public OpKernel {
 public:
  explicit SavedGradCudaKernel(BinaryOp op) : op_(op) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& saved = ctx.input(1);
    if (dy.dtype() != saved.dtype() || dy.sizes() != saved.sizes()) {
      ctx.fail("inputs must have the same type, got " + dy.type_string() + " and " + saved.type_string());
    }
    if (!is_floating(dy.dtype())) ctx.fail("needs a floating-point type, got " + dy.type_string());
    const ElementType type = cuda::element_type(ctx, dy.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, saved, "input 1");
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    cuda::BroadcastIndexing flat;  // same shapes: one axis of stride 1
    flat.rank = 1;
    flat.sizes[0] = dx.num_elements();
    flat.stride_a[0] = flat.stride_b[0] = 1;
    cuda::launch_binary(op_, type, dy.raw_data(), saved.raw_data(), dx.raw_data(), dx.num_elements(), flat, 1.0f, stream);
    cuda::check_launch(ctx, "binary_kernel");
  }

 private:
  BinaryOp op_;
};

// <Activation>Grad(dY, X) = dY * f'(X), with the forward op's attributes.
class ActivationGradCudaKernel final : public OpKernel {
 public:
  ActivationGradCudaKernel(const Node& node, cuda::Activation activation)
      : activation_(activation), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    check_activation_grad(ctx, dy, x, dtype_);
    const ElementType type = cuda::element_type(ctx, dtype_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, x, "X");
    Tensor& dx = ctx.allocate_output(0, dtype_, x.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    cuda::launch_activation_grad(activation_.op, type, dy.raw_data(), x.raw_data(), dx.raw_data(), dx.num_elements(),
                                 activation_.params, stream);
    cuda::check_launch(ctx, "activation_grad_kernel");
  }

 private:
  cuda::Activation activation_;
  DType dtype_;
};

// ClipGrad(dY, X, min?, max?) = dY where min <= X <= max, else 0.
class ClipGradCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    check_clip_grad(ctx, dy, x);
    const ElementType type = cuda::element_type(ctx, x.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, x, "X");
    cuda::ClipBounds bounds = cuda::clip_bounds(ctx, 2);
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    cuda::launch_clip_grad(type, dy.raw_data(), x.raw_data(), dx.raw_data(), dx.num_elements(), bounds.values,
                           bounds.low, bounds.high, stream);
    cuda::check_launch(ctx, "clip_grad_kernel");
  }
};

// PReluGrad(dY, X, slope) -> (dX, dSlope of X's shape).
class PReluGradCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& slope = ctx.input(2);
    check_prelu_grad(ctx, dy, x, slope);
    const ElementType type = cuda::element_type(ctx, x.dtype());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, x, "X");
    cuda::require_on_device(ctx, slope, "slope");
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    Tensor& dslope = ctx.allocate_output(1, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(x.sizes(), x.sizes(), slope.sizes());
    if (!indexing) ctx.fail("broadcasting " + slope.type_string() + " to " + x.type_string() + " needs more axes than the GPU kernel takes");
    cuda::launch_prelu_grad(type, dy.raw_data(), x.raw_data(), slope.raw_data(), dx.raw_data(), dslope.raw_data(),
                            dx.num_elements(), *indexing, stream);
    cuda::check_launch(ctx, "prelu_grad_kernel");
  }
};

void add_saved_grad(KernelRegistry& registry, const char* op_type, BinaryOp op) {
  registry.add(op_type, DeviceType::kCuda, cuda::kFloatTypes,
               [op](const Node&) { return std::make_unique<SavedGradCudaKernel>(op); });
}

}  // namespace

void register_elementwise_grad_cuda_kernels(KernelRegistry& registry) {
  add_saved_grad(registry, "ReluGrad", BinaryOp::kReluGrad);
  add_saved_grad(registry, "SigmoidGrad", BinaryOp::kSigmoidGrad);
  add_saved_grad(registry, "TanhGrad", BinaryOp::kTanhGrad);
  for (const std::string& name : cuda::activation_names()) {
    registry.add(name + "Grad", DeviceType::kCuda, cuda::kFloatTypes, [name](const Node& node) {
      return std::make_unique<ActivationGradCudaKernel>(node, cuda::activation_of(name, node));
    });
  }
  registry.add("PReluGrad", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node&) { return std::make_unique<PReluGradCudaKernel>(); });
  registry.add("ClipGrad", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node&) { return std::make_unique<ClipGradCudaKernel>(); });
}

}  // namespace weir
