#include "ops/cuda/reduce_kernels.h"

#include <optional>
#include <string>

#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/host_input.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/cuda/reduce_device.h"
#include "ops/cuda/reduce_layout.h"
#include "ops/elementwise/backward_kernels.h"
#include "ops/elementwise/broadcast.h"
#include "ops/reduce/reduce_axes.h"
#include "ops/reduce/reduce_kernels.h"
#include "ops/tensor/indexing.h"
#include "ops/wide_output.h"

namespace weir {

namespace {

using cuda::Reduction;
using cuda::ReduceType;

std::optional<ReduceType> reduce_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return ReduceType::kF32;
    case DType::kFloat64: return ReduceType::kF64;
    case DType::kFloat16: return ReduceType::kF16;
    case DType::kBFloat16: return ReduceType::kBF16;
    case DType::kInt32: return ReduceType::kI32;
    case DType::kInt64: return ReduceType::kI64;
    default: return std::nullopt;
  }
}

ReduceType checked_type(const KernelContext& ctx, const Tensor& tensor) {
  std::optional<ReduceType> type = reduce_type(tensor.dtype());
  if (!type) ctx.fail("the CUDA kernel takes f32, f64, f16, bf16, i32 or i64, got " + tensor.type_string());
  return *type;
}

// Runs the reduction into `y` (y.num_elements() outputs), with partial
// results (and LogSumExp's shifts) in scratch of this launch.
void reduce(KernelContext& ctx, Reduction reduction, const Tensor& x, Tensor& y, const std::vector<bool>& reduced) {
  if (y.num_elements() == 0) return;
  const ReduceType in_type = checked_type(ctx, x);
  const ReduceType out_type = checked_type(ctx, y);
  cudaStream_t stream = cuda::cuda_stream(ctx);
  cuda::require_on_device(ctx, x, "input 0");
  const std::optional<cuda::ReduceLayout> layout = cuda::reduce_layout(x.sizes(), reduced);
  if (!layout) {
    ctx.fail("reducing " + x.type_string() + " alternates kept and reduced axes more often than the CUDA kernel takes (" +
             std::to_string(cuda::ReduceLayout::kMaxRank) + " runs of each)");
  }
  const cuda::LaunchScratch scratch(ctx, {cuda::reduce_workspace_bytes(reduction, *layout)});
  cuda::launch_reduce(reduction, in_type, x.raw_data(), out_type, y.raw_data(), *layout, scratch.part(0), stream);
  cuda::check_launch(ctx, "reduce kernels");
}

class ReduceCudaKernel final : public OpKernel {
 public:
  ReduceCudaKernel(const Node& node, Reduction reduction) : axes_(ReduceAxes::of(node)), reduction_(reduction) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    ReduceAxes axes = axes_;
    if (ctx.has_input(1)) axes.axes = index_values(ctx, cuda::host_input(ctx, 1, "axes"), "axes");
    std::vector<bool> reduced = axes.resolve(x.rank(), [&](const std::string& message) { ctx.fail(message); });
    checked_type(ctx, x);
    cuda::cuda_stream(ctx);
    Tensor& y = ctx.allocate_output(0, x.dtype(), axes.output_sizes(x.sizes(), reduced), KernelContext::Fill::kUninitialized);
    reduce(ctx, reduction_, x, y, reduced);
  }

 private:
  ReduceAxes axes_;
  Reduction reduction_;
};

class SumToShapeCudaKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t>& target = ctx.input(1).sizes();
    check_sum_to_shape(ctx, x, ctx.input(1));
    // Axis a of x is summed where the right-aligned target has no axis or one of size 1.
    const size_t lead = x.sizes().size() - target.size();
    std::vector<bool> reduced(x.sizes().size());
    for (size_t a = 0; a < reduced.size(); ++a) reduced[a] = a < lead || target[a - lead] == 1;
    const DType out_dtype = kernel_output_dtype(ctx, x.dtype());
    cuda::cuda_stream(ctx);
    Tensor& out = ctx.allocate_output(0, out_dtype, target, KernelContext::Fill::kUninitialized);
    reduce(ctx, Reduction::kSum, x, out, reduced);
  }
};

// dY broadcast back over the reduced axes (BroadcastReduced), or only where X
// equals the reduced Y (ReduceExtremumGrad).
class ReduceBackwardCudaKernel final : public OpKernel {
 public:
  ReduceBackwardCudaKernel(const Node& node, bool extremum)
      : axes_(ReduceAxes::of(node)), mean_(reduce_backward_mean(node)), extremum_(extremum) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const ReduceBackwardShape shape = reduce_backward_shape(ctx, axes_, extremum_);
    const std::vector<bool>& reduced = shape.reduced;
    const ReduceType type = checked_type(ctx, dy);
    if (extremum_ && x.dtype() != dy.dtype()) {
      ctx.fail("X " + x.type_string() + " and dY " + dy.type_string() + " must have one dtype");
    }
    const int64_t count = shape.count;
    cudaStream_t stream = cuda::cuda_stream(ctx);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    if (dx.num_elements() == 0) return;
    cuda::require_on_device(ctx, dy, "dY");
    if (extremum_) {
      cuda::require_on_device(ctx, x, "X");
      cuda::require_on_device(ctx, ctx.input(2), "Y");
    }
    // dY's strides over X's axes: dense over the kept sizes, 0 along reduced axes.
    const std::optional<cuda::BroadcastBackLayout> layout = cuda::broadcast_back_layout(x.sizes(), reduced);
    if (!layout) {
      ctx.fail(x.type_string() + " has more axes than the CUDA kernel takes (" +
               std::to_string(cuda::BroadcastBackLayout::kMaxRank) + ")");
    }
    cuda::launch_broadcast_reduced(type, dy.raw_data(), extremum_ ? x.raw_data() : nullptr,
                                   extremum_ ? ctx.input(2).raw_data() : nullptr, dx.raw_data(), *layout, dx.num_elements(),
                                   count, mean_, extremum_, stream);
    cuda::check_launch(ctx, "broadcast_reduced_kernel");
  }

 private:
  ReduceAxes axes_;
  bool mean_;
  bool extremum_;
};

}  // namespace

void register_reduce_cuda_kernels(KernelRegistry& registry) {
  const std::vector<DType>& floating = reduce_floating_types();
  const std::vector<DType>& numeric = reduce_numeric_types();
  for (const ReduceOpEntry& op : reduce_ops()) {
    Reduction reduction = op.reduction;
    registry.add(op.name, DeviceType::kCuda, op.floating_only ? floating : numeric,
                 [reduction](const Node& node) { return std::make_unique<ReduceCudaKernel>(node, reduction); });
  }
  registry.add("SumToShape", DeviceType::kCuda, floating, [](const Node&) { return std::make_unique<SumToShapeCudaKernel>(); });
  registry.add("BroadcastReduced", DeviceType::kCuda, numeric,
               [](const Node& node) { return std::make_unique<ReduceBackwardCudaKernel>(node, /*extremum=*/false); });
  registry.add("ReduceExtremumGrad", DeviceType::kCuda, numeric,
               [](const Node& node) { return std::make_unique<ReduceBackwardCudaKernel>(node, /*extremum=*/true); });
}

}  // namespace weir
