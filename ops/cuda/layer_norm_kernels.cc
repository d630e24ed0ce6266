#include "ops/cuda/layer_norm_kernels.h"

#include <memory>
#include <string>
#include <vector>

#include "core/shape.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/element_types.h"
#include "ops/cuda/launch_scratch.h"
#include "ops/cuda/layer_norm_device.h"
#include "ops/cuda/normalization_grad_outputs.h"
#include "ops/node_attributes.h"

namespace weir {

namespace {

// X as [rows, len]: len the product of the normalized axes [axis, rank).
struct LayerNormShape {
  int64_t axis = 0, rows = 0, len = 0;
};

LayerNormShape layer_norm_shape(const KernelContext& ctx, const std::vector<int64_t>& sizes) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  int64_t axis = int_attr(ctx.node(), "axis", -1);
  if (axis < -rank || axis >= rank) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range for input " + format_sizes(sizes));
  }
  if (axis < 0) axis += rank;
  LayerNormShape shape{axis, 1, 1};
  for (int64_t i = 0; i < rank; ++i) (i < axis ? shape.rows : shape.len) *= sizes[static_cast<size_t>(i)];
  return shape;
}

// Scale and B hold one value per normalized element, in X's dtype.
void check_param(const KernelContext& ctx, const LayerNormShape& shape, size_t index, const char* name) {
  const Tensor& t = ctx.input(index);
  if (t.num_elements() != shape.len) {
    ctx.fail(std::string(name) + " has shape " + format_sizes(t.sizes()) + "; expected " + std::to_string(shape.len) +
             " values, one per normalized element");
  }
  if (t.dtype() != ctx.input(0).dtype()) {
    ctx.fail(std::string(name) + " is " + std::string(dtype_name(t.dtype())) + "; expected " +
             std::string(dtype_name(ctx.input(0).dtype())));
  }
  cuda::require_on_device(ctx, t, name);
}

float epsilon_of(const Node& node) { return static_cast<float>(float_attr(node, "epsilon", 1e-5)); }

class LayerNormCudaKernel final : public OpKernel {
 public:
  explicit LayerNormCudaKernel(const Node& node) : epsilon_(epsilon_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const cuda::ElementType type = cuda::element_type(ctx, x.dtype());
    const LayerNormShape shape = layer_norm_shape(ctx, x.sizes());
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, x, "X");
    check_param(ctx, shape, 1, "scale");
    const bool has_bias = ctx.has_input(2);
    if (has_bias) check_param(ctx, shape, 2, "B");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.sizes(), KernelContext::Fill::kUninitialized);
    // Mean and InvStdDev: X's leading axes, then 1s; f32. Rows of no
    // elements have no statistics to write: those stay zero.
    float* statistics[2] = {nullptr, nullptr};
    const bool empty = shape.rows * shape.len == 0;
    for (size_t out = 1; out < ctx.num_outputs() && out < 3; ++out) {
      std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().begin() + shape.axis);
      sizes.resize(x.sizes().size(), 1);
      Tensor& t = ctx.allocate_output(out, DType::kFloat32, sizes,
                                      empty ? KernelContext::Fill::kZeros : KernelContext::Fill::kUninitialized);
      statistics[out - 1] = static_cast<float*>(t.raw_data());
    }
    if (empty) return;
    cuda::launch_layer_norm(type, x.raw_data(), ctx.input(1).raw_data(), has_bias ? ctx.input(2).raw_data() : nullptr,
                            y.raw_data(), statistics[0], statistics[1], shape.rows, shape.len, epsilon_, stream);
    cuda::check_launch(ctx, "layer_norm_rows");
  }

 private:
  float epsilon_;
};

// (dY, X, scale) -> (dX, dScale, dB), the statistics recomputed from X.
class LayerNormGradCudaKernel final : public OpKernel {
 public:
  explicit LayerNormGradCudaKernel(const Node& node) : epsilon_(epsilon_of(node)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& scale = ctx.input(2);
    if (dy.sizes() != x.sizes()) {
      ctx.fail("dY has shape " + format_sizes(dy.sizes()) + " but X has " + format_sizes(x.sizes()));
    }
    const cuda::ElementType type = cuda::element_type(ctx, x.dtype());
    const LayerNormShape shape = layer_norm_shape(ctx, x.sizes());
    const cuda::NormalizationGradOutputs out = cuda::normalization_grad_outputs(ctx, dy, x, scale, shape.len);
    if (shape.len == 0) return;  // then X, dScale and dB are all empty
    // Per-row statistics and per-chunk column sums.
    const cuda::LaunchScratch scratch(ctx, {cuda::layer_norm_grad_workspace_bytes(shape.rows, shape.len)});
    void* workspace = scratch.part(0);
    cuda::launch_layer_norm_grad(type, dy.raw_data(), x.raw_data(), scale.raw_data(), out.dx.raw_data(),
                                 out.dscale.raw_data(), out.dbias.raw_data(), shape.rows, shape.len, epsilon_,
                                 workspace, out.stream);
    cuda::check_launch(ctx, "layer_norm_grad");
  }

 private:
  float epsilon_;
};

}  // namespace

void register_layer_norm_cuda_kernels(KernelRegistry& registry) {
  registry.add("LayerNormalization", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<LayerNormCudaKernel>(node); });
  registry.add("LayerNormGrad", DeviceType::kCuda, cuda::kFloatTypes,
               [](const Node& node) { return std::make_unique<LayerNormGradCudaKernel>(node); });
}

}  // namespace weir
