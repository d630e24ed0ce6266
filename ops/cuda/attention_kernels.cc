#include "ops/cuda/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cuda/attention_device.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/nn/attention.h"

namespace weir {

namespace {

const std::vector<DType> kCudaAttentionTypes = {DType::kFloat32, DType::kBFloat16};

class AttentionCudaKernel final : public OpKernel {
 public:
  explicit AttentionCudaKernel(const Node& node)
      : heads_(attention_num_heads(node)),
        scale_(node.has_attr("scale") ? std::optional<double>(node.attr("scale").f()) : std::nullopt) {}

  void compute(KernelContext& ctx) override {
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const AttentionGeometry geometry = attention_geometry(ctx, heads_, scale_);
    cuda::ElementType type = cuda::ElementType::kFloat32;
    if (q.dtype() == DType::kBFloat16) {
      type = cuda::ElementType::kBFloat16;
    } else if (q.dtype() != DType::kFloat32) {
      ctx.fail("the CUDA kernel takes f32 or bf16, got " + q.type_string());
    }
    const int64_t batch = geometry.batch, seq = geometry.seq, dim = geometry.dim;
    const double scale = geometry.scale;
    cuda::AttentionMaskStrides strides;
    if (mask != nullptr) {
      const std::vector<int64_t>& m = geometry.mask_sizes;
      strides.row = m[2] == 1 ? 0 : seq;
      strides.head = m[1] == 1 ? 0 : m[2] * seq;
      strides.batch = m[0] == 1 ? 0 : m[1] * m[2] * seq;
    }
    cudaStream_t stream = cuda::cuda_stream(ctx);
    cuda::require_on_device(ctx, q, "Q");
    cuda::require_on_device(ctx, k, "K");
    cuda::require_on_device(ctx, v, "V");
    if (mask != nullptr) cuda::require_on_device(ctx, *mask, "mask");
    Tensor& y = ctx.allocate_output(0, q.dtype(), q.sizes(), KernelContext::Fill::kUninitialized);
    if (y.num_elements() == 0) return;
    if (cuda::attention_shared_bytes(seq, dim) > cuda::kAttentionMaxSharedBytes) {
      ctx.fail("sequence length " + std::to_string(seq) + " and head size " + std::to_string(dim) +
               " need " + std::to_string(cuda::attention_shared_bytes(seq, dim)) +
               " bytes of shared memory per query row; the fused CUDA kernel takes at most " +
               std::to_string(cuda::kAttentionMaxSharedBytes) + " (S + D <= " +
               std::to_string(cuda::kAttentionMaxSharedBytes / 4) + ")");
    }
    cuda::launch_attention(type, q.raw_data(), k.raw_data(), v.raw_data(), mask != nullptr ? mask->raw_data() : nullptr,
                           strides, y.raw_data(), batch, seq, heads_, dim, static_cast<float>(scale), stream);
    cuda::check_launch(ctx, "attention_rows");
  }

 private:
  int64_t heads_;
  std::optional<double> scale_;
};

}  // namespace

void register_attention_cuda_kernels(KernelRegistry& registry) {
  registry.add("Attention", DeviceType::kCuda, kCudaAttentionTypes,
               [](const Node& node) { return std::make_unique<AttentionCudaKernel>(node); });
}

}  // namespace weir
