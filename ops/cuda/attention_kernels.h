// CUDA kernel of Attention (ops/nn/attention.h): Q, K, V, Y [B, S, H*D],
// num_heads and scale (default 1/sqrt(D)), the optional additive mask
// broadcasting to [B, H, S, S]; f32 and bf16 (bf16 computes in f32; the CPU
// also takes f64, the GPU does not). One fused kernel with the scores of a
// query row in shared memory: it takes S + D <= 12032 and refuses longer
// rows naming the limit. Checks and error messages are the CPU kernel's.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_attention_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
