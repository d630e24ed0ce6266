// The device side of the CUDA Attention kernel (attention_device.cu): one
// fused kernel, a block per (batch, head, query row), the row's scores and
// softmax in shared memory. It reads every key and value row once per query
// row, so it suits the moderate sequence lengths it accepts
// (attention_fits), not long ones.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// The shared memory one block needs: the query row and the scores, f32.
int64_t attention_shared_bytes(int64_t seq, int64_t dim);
// The most dynamic shared memory the kernel takes: 48 KiB, what a block
// gets on any GPU without opting in, less room for its static reductions.
constexpr int64_t kAttentionMaxSharedBytes = 47 * 1024;

// Where mask[b, h, i, j] lives: b * batch + h * head + i * row + j; a
// stride of 0 broadcasts that axis. Unused without a mask.
struct AttentionMaskStrides {
  int64_t batch = 0, head = 0, row = 0;
};

// Y[b, i, h, :] = sum_j softmax_j(scale * Q[b,i,h,:].K[b,j,h,:] + mask[b,h,i,j]) V[b,j,h,:]
// for Q, K, V, Y [batch, seq, heads * dim] of `type` (f32 or bf16), the
// mask (nullptr: none) of the same type. Needs batch * seq * heads * dim > 0
// and attention_shared_bytes(seq, dim) <= kAttentionMaxSharedBytes.
void launch_attention(ElementType type, const void* q, const void* k, const void* v, const void* mask,
                      const AttentionMaskStrides& mask_strides, void* y, int64_t batch, int64_t seq, int64_t heads,
                      int64_t dim, float scale, cudaStream_t stream);

}  // namespace weir::cuda
