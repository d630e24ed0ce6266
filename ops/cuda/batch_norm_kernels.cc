#include "ops/cuda/batch_norm_kernels.h"

#include <memory>
#include <string>

#include "ops/cuda/batch_norm_device.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/nn/normalization_kernels.h"

namespace weir {

namespace {

using cuda::ElementType;

using cuda::element_type;

double epsilon_of(const Node& node) { return node.has_attr("epsilon") ? node.attr("epsilon").f() : 1e-5; }
bool training_of(const Node& node) { return node.has_attr("training_mode") && node.attr("training_mode").i() != 0; }

// X [N, C, ...] is the CPU's plan: `rows` = N runs of a `len`-element plane per channel.
NormPlan layout_of(const KernelContext& ctx, const Tensor& x) { return normalization_plan(ctx, NormKind::kBatch, x.sizes()); }

// Input `index` is [C] of X's dtype, as on the CPU, and on the GPU.
void check_param(const KernelContext& ctx, const NormPlan& l, size_t index, const char* name) {
  check_normalization_param(ctx, l, index, name);
  cuda::require_on_device(ctx, ctx.input(index), name);
}

class BatchNormCudaKernel final : public OpKernel {
 public:
  explicit BatchNormCudaKernel(const Node& node)
      : epsilon_(epsilon_of(node)), training_(training_of(node)),
        momentum_(node.has_attr("momentum") ? node.attr("momentum").f() : 0.9) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const NormPlan l = layout_of(ctx, x);
    const ElementType type = element_type(ctx, x);
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "X");
    check_param(ctx, l, 1, "scale");
    if (ctx.has_input(2)) check_param(ctx, l, 2, "B");
    if (!training_) {
      check_param(ctx, l, 3, "input_mean");
      check_param(ctx, l, 4, "input_var");
    }
    const size_t statistics = std::min<size_t>(ctx.num_outputs(), 3);
    for (size_t out = 1; out < statistics; ++out) check_param(ctx, l, out + 2, out == 1 ? "input_mean" : "input_var");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);

    const auto channels = static_cast<size_t>(l.channels);
    const size_t workspace = training_ ? static_cast<size_t>(cuda::batch_norm_workspace_doubles(l.rows, l.channels, l.len)) : 0;
    const cuda::LaunchScratch scratch(ctx, {channels * sizeof(double), channels * sizeof(double), channels * sizeof(float),
                                            channels * sizeof(float), workspace * sizeof(double)});
    auto* mean = scratch.part<double>(0);
    auto* var = scratch.part<double>(1);
    if (l.channels > 0) {
      if (training_) {
        cuda::launch_batch_norm_stats(type, x.raw_data(), l.rows, l.channels, l.len, mean, var,
                                      scratch.part<double>(4), stream);
        cuda::check_launch(ctx, "batch_norm_stats");
      } else {
        cuda::launch_to_f64(type, ctx.input(3).raw_data(), mean, l.channels, stream);
        cuda::check_launch(ctx, "to_f64 (input_mean)");
        cuda::launch_to_f64(type, ctx.input(4).raw_data(), var, l.channels, stream);
        cuda::check_launch(ctx, "to_f64 (input_var)");
      }
    }
    if (y.num_elements() > 0) {
      auto* a = scratch.part<float>(2);
      auto* b = scratch.part<float>(3);
      cuda::launch_batch_norm_coefficients(type, ctx.input(1).raw_data(), ctx.has_input(2) ? ctx.input(2).raw_data() : nullptr,
                                           mean, var, epsilon_, l.channels, a, b, stream);
      cuda::check_launch(ctx, "batch_norm_coefficients");
      cuda::launch_batch_norm_apply(type, x.raw_data(), a, b, y.raw_data(), l.rows, l.channels, l.len, stream);
      cuda::check_launch(ctx, "batch_norm_apply");
    }
    // running = running * momentum + batch * (1 - momentum); outside training, the inputs pass through.
    for (size_t out = 1; out < statistics; ++out) {
      const Tensor& running = ctx.input(out + 2);
      Tensor& t = ctx.allocate_output(out, running.dtype(), running.sizes(), KernelContext::Fill::kUninitialized);
      if (l.channels == 0) continue;
      cuda::launch_running_statistic(type, running.raw_data(), out == 1 ? mean : var, momentum_, training_, t.raw_data(),
                                     l.channels, stream);
      cuda::check_launch(ctx, "running_statistic");
    }
  }

 private:
  double epsilon_;
  bool training_;
  double momentum_;
};

// (dY, X, scale, mean, var) -> (dX, dScale, dB).
class BatchNormGradCudaKernel final : public OpKernel {
 public:
  explicit BatchNormGradCudaKernel(const Node& node) : epsilon_(epsilon_of(node)), training_(training_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (dy.sizes() != x.sizes()) {
      ctx.fail("dY has shape " + format_sizes(dy.sizes()) + " but X has " + format_sizes(x.sizes()));
    }
    const NormPlan l = layout_of(ctx, x);
    const ElementType type = element_type(ctx, x);
    const Tensor& scale = ctx.input(2);
    if (scale.num_elements() != l.channels) {
      ctx.fail("scale has " + std::to_string(scale.num_elements()) + " values; expected " + std::to_string(l.channels));
    }
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (ctx.has_input(i) && ctx.input(i).dtype() != x.dtype()) {
        ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.input(i).dtype())) + "; expected " +
                 std::string(dtype_name(x.dtype())));
      }
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, dy, "dY");
    cuda::require_on_device(ctx, x, "X");
    cuda::require_on_device(ctx, scale, "scale");
    if (!training_) {
      for (size_t i : {size_t{3}, size_t{4}}) {
        const char* name = i == 3 ? "mean" : "var";
        if (!ctx.has_input(i) || ctx.input(i).num_elements() != l.channels) {
          ctx.fail(std::string(name) + " has shape " +
                   (ctx.has_input(i) ? format_sizes(ctx.input(i).sizes()) : std::string("(absent)")) + "; expected " +
                   std::to_string(l.channels) + " values, one per channel");
        }
        cuda::require_on_device(ctx, ctx.input(i), name);
      }
    }
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    Tensor& dscale = ctx.allocate_output(1, scale.dtype(), scale.sizes(), KernelContext::Fill::kUninitialized);
    Tensor& dbias = ctx.allocate_output(2, scale.dtype(), scale.sizes(), KernelContext::Fill::kUninitialized);
    if (l.channels == 0) return;

    const auto channels = static_cast<size_t>(l.channels);
    const auto workspace = static_cast<size_t>(cuda::batch_norm_workspace_doubles(l.rows, l.channels, l.len));
    const cuda::LaunchScratch scratch(ctx, {channels * sizeof(double), channels * sizeof(double), workspace * sizeof(double)});
    auto* mean = scratch.part<double>(0);
    auto* var = scratch.part<double>(1);
    auto* sums = scratch.part<double>(2);
    if (training_) {
      cuda::launch_batch_norm_stats(type, x.raw_data(), l.rows, l.channels, l.len, mean, var, sums, stream);
      cuda::check_launch(ctx, "batch_norm_stats");
    } else {
      cuda::launch_to_f64(type, ctx.input(3).raw_data(), mean, l.channels, stream);
      cuda::check_launch(ctx, "to_f64 (mean)");
      cuda::launch_to_f64(type, ctx.input(4).raw_data(), var, l.channels, stream);
      cuda::check_launch(ctx, "to_f64 (var)");
    }
    cuda::launch_batch_norm_grad(type, dy.raw_data(), x.raw_data(), scale.raw_data(), mean, var, epsilon_, training_,
                                 dx.raw_data(), dscale.raw_data(), dbias.raw_data(), l.rows, l.channels, l.len, sums,
                                 stream);
    cuda::check_launch(ctx, "batch_norm_grad");
  }

 private:
  double epsilon_;
  bool training_;
};

}  // namespace

void register_batch_norm_cuda_kernels(KernelRegistry& registry) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  registry.add("BatchNormalization", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<BatchNormCudaKernel>(node); });
  registry.add("BatchNormGrad", DeviceType::kCuda, types,
               [](const Node& node) { return std::make_unique<BatchNormGradCudaKernel>(node); });
}

}  // namespace weir
