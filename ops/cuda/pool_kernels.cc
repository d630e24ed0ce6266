#include "ops/cuda/pool_kernels.h"

#include <memory>
#include <string>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/pool_device.h"
#include "ops/nn/pool_kernels.h"
#include "ops/nn/pool_problem.h"

namespace weir {

namespace {

using cuda::ElementType;

using cuda::element_type;

class MaxPoolCudaKernel final : public OpKernel {
 public:
  explicit MaxPoolCudaKernel(const Node& node)
      : column_major_(max_pool_column_major(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ElementType type = element_type(ctx, x);
    const ConvProblem p = pool_problem(ctx.node(), x.sizes());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "X");
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.out_sizes(), KernelContext::Fill::kUninitialized);
    int64_t* indices = ctx.num_outputs() > 1
        ? ctx.allocate_output(1, DType::kInt64, p.out_sizes(), KernelContext::Fill::kUninitialized).data<int64_t>()
        : nullptr;
    if (y.num_elements() == 0) return;
    cuda::launch_max_pool(type, x.raw_data(), y.raw_data(), indices, pool_windows_of(p), column_major_, stream);
    cuda::check_launch(ctx, "max_pool");
  }

 private:
  bool column_major_;
};

class AveragePoolCudaKernel final : public OpKernel {
 public:
  explicit AveragePoolCudaKernel(const Node& node) : include_pad_(pool_count_include_pad(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ElementType type = element_type(ctx, x);
    const ConvProblem p = pool_problem(ctx.node(), x.sizes());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "X");
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.out_sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    cuda::launch_average_pool(type, x.raw_data(), y.raw_data(), pool_windows_of(p), include_pad_, stream);
    cuda::check_launch(ctx, "average_pool");
  }

 private:
  bool include_pad_;
};

// MaxPoolGrad / AveragePoolGrad (dY, X) -> dX.
class PoolGradCudaKernel final : public OpKernel {
 public:
  PoolGradCudaKernel(const Node& node, bool max) : max_(max), include_pad_(pool_count_include_pad(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const ElementType type = element_type(ctx, x);
    const ConvProblem p = pool_problem(ctx.node(), x.sizes());
    check_pool_grad(ctx, dy, p);
    if (dy.dtype() != x.dtype()) ctx.fail("dY is " + dy.type_string() + "; expected X's " + std::string(dtype_name(x.dtype())));
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    if (max_) cuda::require_on_device(ctx, x, "X");
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    if (max_) {
      cuda::launch_max_pool_grad(type, x.raw_data(), dy.raw_data(), dx.raw_data(), pool_windows_of(p), stream);
      cuda::check_launch(ctx, "max_pool_grad");
    } else {
      cuda::launch_average_pool_grad(type, dy.raw_data(), dx.raw_data(), pool_windows_of(p), include_pad_, stream);
      cuda::check_launch(ctx, "average_pool_grad");
    }
  }

 private:
  bool max_;
  bool include_pad_;
};

class GlobalPoolCudaKernel final : public OpKernel {
 public:
  explicit GlobalPoolCudaKernel(bool max) : max_(max) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const GlobalPoolShape shape = global_pool_shape(ctx, x, max_);
    const ElementType type = element_type(ctx, x);
    const int64_t planes = shape.planes, plane = shape.plane;
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "X");
    Tensor& y = ctx.allocate_output(0, x.dtype(), shape.sizes, KernelContext::Fill::kUninitialized);
    if (planes == 0) return;
    cuda::launch_global_pool(max_, type, x.raw_data(), y.raw_data(), planes, plane, stream);
    cuda::check_launch(ctx, max_ ? "global_max_pool" : "global_average_pool");
  }

 private:
  bool max_;
};

}  // namespace

cuda::PoolWindows pool_windows_of(const ConvProblem& p) {
  cuda::PoolWindows w;
  w.planes = p.batch * p.in_channels;
  w.spatial_rank = static_cast<int>(p.spatial_rank);
  for (size_t a = 0; a < 3; ++a) {
    w.in[a] = p.in[a];
    w.out[a] = p.out[a];
    w.kernel[a] = p.kernel[a];
    w.strides[a] = p.strides[a];
    w.dilations[a] = p.dilations[a];
    w.pads_begin[a] = p.pads_begin[a];
    w.pads_end[a] = p.pads_end[a];
  }
  return w;
}

void register_pool_cuda_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  registry.add("MaxPool", DeviceType::kCuda, types, [](const Node& node) { return std::make_unique<MaxPoolCudaKernel>(node); });
  registry.add("AveragePool", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<AveragePoolCudaKernel>(node); });
  registry.add("MaxPoolGrad", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<PoolGradCudaKernel>(node, /*max=*/true); });
  registry.add("AveragePoolGrad", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<PoolGradCudaKernel>(node, /*max=*/false); });
  registry.add("GlobalAveragePool", DeviceType::kCuda, types,
               [](const Node&) { return std::make_unique<GlobalPoolCudaKernel>(/*max=*/false); });
  registry.add("GlobalMaxPool", DeviceType::kCuda, types,
               [](const Node&) { return std::make_unique<GlobalPoolCudaKernel>(/*max=*/true); });
}

}  // namespace weir
