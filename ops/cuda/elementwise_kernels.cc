#include "ops/cuda/elementwise_kernels.h"

#include <string>

#include "ops/cuda/broadcast_indexing.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/elementwise_device.h"
#include "ops/elementwise/binary_kernels.h"
#include "ops/elementwise/broadcast.h"

namespace weir {

namespace {

using cuda::BinaryOp;
using cuda::ElementType;
using cuda::UnaryOp;

const std::vector<DType> kCudaFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

ElementType element_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return ElementType::kFloat16;
    case DType::kBFloat16: return ElementType::kBFloat16;
    default: return ElementType::kFloat32;  // registered for these three only
  }
}

class BinaryCudaKernel final : public OpKernel {
 public:
  BinaryCudaKernel(const Node& node, BinaryOp op) : op_(op), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const std::vector<int64_t> out_sizes = binary_output_sizes(ctx, a, b, dtype_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, a, "input 0");
    cuda::require_on_device(ctx, b, "input 1");
    Tensor& out = ctx.allocate_output(0, dtype_, out_sizes, KernelContext::Fill::kUninitialized);
    if (out.num_elements() == 0) return;
    std::optional<cuda::BroadcastIndexing> indexing = cuda::broadcast_indexing(out_sizes, a.sizes(), b.sizes());
    if (!indexing) ctx.fail("broadcasting " + a.type_string() + " with " + b.type_string() + " needs more axes than the GPU kernel takes");
    cuda::launch_binary(op_, element_type(dtype_), a.raw_data(), b.raw_data(), out.raw_data(), out.num_elements(),
                        *indexing, 1.0f, stream);
    cuda::check_launch(ctx, "binary_kernel");
  }

 private:
  BinaryOp op_;
  DType dtype_;
};

class UnaryCudaKernel final : public OpKernel {
 public:
  UnaryCudaKernel(const Node& node, UnaryOp op) : op_(op), dtype_(kernel_dtype(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != dtype_) {
      ctx.fail("input is " + std::string(dtype_name(x.dtype())) + "; this kernel was built for " +
               std::string(dtype_name(dtype_)));
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    Tensor& y = ctx.allocate_output(0, dtype_, x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_unary(op_, element_type(dtype_), x.raw_data(), y.raw_data(), y.num_elements(), stream);
    cuda::check_launch(ctx, "unary_kernel");
  }

 private:
  UnaryOp op_;
  DType dtype_;
};

void add_binary(KernelRegistry& registry, const char* op_type, BinaryOp op) {
  registry.add(op_type, DeviceType::kCuda, kCudaFloatTypes,
               [op](const Node& node) { return std::make_unique<BinaryCudaKernel>(node, op); });
}

void add_unary(KernelRegistry& registry, const char* op_type, UnaryOp op) {
  registry.add(op_type, DeviceType::kCuda, kCudaFloatTypes,
               [op](const Node& node) { return std::make_unique<UnaryCudaKernel>(node, op); });
}

}  // namespace

void register_elementwise_cuda_kernels(KernelRegistry& registry) {
  add_binary(registry, "Add", BinaryOp::kAdd);
  add_binary(registry, "Sub", BinaryOp::kSub);
  add_binary(registry, "Mul", BinaryOp::kMul);
  add_binary(registry, "Div", BinaryOp::kDiv);
  add_unary(registry, "Neg", UnaryOp::kNeg);
  add_unary(registry, "Relu", UnaryOp::kRelu);
  add_unary(registry, "Sigmoid", UnaryOp::kSigmoid);
  add_unary(registry, "Tanh", UnaryOp::kTanh);
  add_unary(registry, "Exp", UnaryOp::kExp);
}

}  // namespace weir
