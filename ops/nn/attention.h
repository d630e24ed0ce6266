// Attention — scaled dot-product attention over packed heads, one op for
// what a transformer writes as Reshape/Transpose per head, MatMul, scale,
// mask, Softmax, MatMul, Transpose/Reshape back (the attention_fusion pass
// makes it):
//
//   Attention(Q, K, V, mask?) -> Y        Q, K, V, Y: [B, S, H*D]
//   Y[b, i, h, :] = sum_j softmax_j(scale * Q[b,i,h,:].K[b,j,h,:] + mask[b,h,i,j]) V[b,j,h,:]
//
// attributes num_heads (H, required) and scale (default 1/sqrt(D)); the
// optional additive mask broadcasts to [B, H, S, S] (its last axis is S).
// The heads are read and written in place in the packed [B, S, H*D] layout
// (strided oneDNN matmuls, the mask as a binary post-op), so no transpose
// runs. f32 and bf16 through oneDNN; f64 by direct loops (the reference).
// Inference only: no gradient rule.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_attention_schemas(OpRegistry& registry);
void register_attention_cpu_kernels(KernelRegistry& registry);

// The num_heads attribute; throws naming the node unless it is positive.
int64_t attention_num_heads(const Node& node);

// One Attention call's sizes, checked the same way by the CPU and CUDA kernels.
struct AttentionGeometry {
  int64_t batch = 0, seq = 0, heads = 0, dim = 0;
  double scale = 1.0;               // the attribute, or 1/sqrt(D)
  std::vector<int64_t> mask_sizes;  // the mask's sizes right-aligned to [B, H, S, S]; empty without one
};
// Checks Q, K, V (inputs 0-2) and the optional mask (input 3) of the
// kernel's context against `heads` and returns their geometry.
AttentionGeometry attention_geometry(const KernelContext& ctx, int64_t heads, std::optional<double> scale);

}  // namespace weir
