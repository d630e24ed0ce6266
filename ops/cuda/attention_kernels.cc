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

namespace weir {

namespace {

const std::vector<DType> kCudaAttentionTypes = {DType::kFloat32, DType::kBFloat16};

int64_t num_heads(const Node& node) {
  int64_t heads = node.has_attr("num_heads") ? node.attr("num_heads").i() : 0;
  if (heads <= 0) {
    throw Error(ErrorKind::kInvalidArgument, "Attention '" + node.name() + "': num_heads must be positive, got " +
                                                 std::to_string(heads))
        .with_node(node.name());
  }
  return heads;
}

// The mask's sizes right-aligned to [B, H, S, S]; checks that each broadcasts.
std::vector<int64_t> mask_sizes(const KernelContext& ctx, const Tensor& mask, int64_t batch, int64_t heads, int64_t seq) {
  if (mask.rank() < 1 || mask.rank() > 4) ctx.fail("mask " + mask.type_string() + " must have rank 1 to 4");
  std::vector<int64_t> sizes(4 - static_cast<size_t>(mask.rank()), 1);
  for (int64_t s : mask.sizes()) sizes.push_back(s);
  const int64_t full[4] = {batch, heads, seq, seq};
  for (size_t i = 0; i < 4; ++i) {
    if (sizes[i] != 1 && sizes[i] != full[i]) {
      ctx.fail("mask " + mask.type_string() + " does not broadcast to [" + std::to_string(batch) + "," +
               std::to_string(heads) + "," + std::to_string(seq) + "," + std::to_string(seq) + "]");
    }
  }
  if (sizes[3] != seq) ctx.fail("mask " + mask.type_string() + " must have the key length " + std::to_string(seq) + " last");
  return sizes;
}

class AttentionCudaKernel final : public OpKernel {
 public:
  explicit AttentionCudaKernel(const Node& node)
      : heads_(num_heads(node)),
        scale_(node.has_attr("scale") ? std::optional<double>(node.attr("scale").f()) : std::nullopt) {}

  void compute(KernelContext& ctx) override {
    const Tensor& q = ctx.input(0);
    const Tensor& k = ctx.input(1);
    const Tensor& v = ctx.input(2);
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (q.rank() != 3 || k.sizes() != q.sizes() || v.sizes() != q.sizes() || k.dtype() != q.dtype() || v.dtype() != q.dtype()) {
      ctx.fail("Q, K and V must be [B, S, H*D] of one shape and dtype, got " + q.type_string() + ", " + k.type_string() +
               ", " + v.type_string());
    }
    cuda::ElementType type = cuda::ElementType::kFloat32;
    if (q.dtype() == DType::kBFloat16) {
      type = cuda::ElementType::kBFloat16;
    } else if (q.dtype() != DType::kFloat32) {
      ctx.fail("the CUDA kernel takes f32 or bf16, got " + q.type_string());
    }
    const int64_t batch = q.sizes()[0], seq = q.sizes()[1], width = q.sizes()[2];
    if (width % heads_ != 0) ctx.fail("hidden size " + std::to_string(width) + " is not divisible by " + std::to_string(heads_) + " heads");
    const int64_t dim = width / heads_;
    const double scale = scale_ ? *scale_ : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(dim, 1)));
    cuda::AttentionMaskStrides strides;
    if (mask != nullptr) {
      if (mask->dtype() != q.dtype()) ctx.fail("mask " + mask->type_string() + " must have Q's dtype");
      const std::vector<int64_t> m = mask_sizes(ctx, *mask, batch, heads_, seq);
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
