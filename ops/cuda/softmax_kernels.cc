#include "ops/cuda/softmax_kernels.h"

#include "ops/axis_lines.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/softmax_device.h"
#include "ops/node_attributes.h"

namespace weir {

namespace {

class SoftmaxCudaKernel final : public OpKernel {
 public:
  SoftmaxCudaKernel(const Node& node, bool log) : axis_(int_attr(node, "axis", -1)), log_(log) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    cuda::ElementType type = cuda::ElementType::kFloat32;
    switch (x.dtype()) {
      case DType::kFloat32: break;
      case DType::kFloat16: type = cuda::ElementType::kFloat16; break;
      case DType::kBFloat16: type = cuda::ElementType::kBFloat16; break;
      default: ctx.fail("the CUDA kernel takes f32, f16 or bf16, got " + x.type_string());
    }
    AxisSplit split = split_at(ctx, x.sizes(), axis_);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "input 0");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_softmax(log_, type, x.raw_data(), y.raw_data(), split.outer, split.n, split.inner, stream);
    cuda::check_launch(ctx, log_ ? "log_softmax" : "softmax");
  }

 private:
  int64_t axis_;
  bool log_;
};

}  // namespace

void register_softmax_cuda_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  registry.add("Softmax", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<SoftmaxCudaKernel>(node, /*log=*/false); });
  registry.add("LogSoftmax", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<SoftmaxCudaKernel>(node, /*log=*/true); });
}

}  // namespace weir
