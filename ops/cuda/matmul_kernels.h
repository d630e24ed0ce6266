// CUDA kernels of MatMul (NumPy semantics: batched, broadcast batch axes,
// 1-D operands promoted), Gemm (alpha * op(A) * op(B) + beta * C, C
// broadcast to the product; output_dtype f32 from f16/bf16) and FusedMatMul
// (activation(A B + bias)) through cuBLASLt, in f32, f16 and bf16 with f32
// arithmetic (no TF32). Semantics are the CPU kernels'
// (ops/linalg/matmul_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_matmul_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
