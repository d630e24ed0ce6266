// CUDA kernels of MatMul (NumPy semantics: batched, broadcast batch axes,
// 1-D operands promoted) and Gemm (alpha * op(A) * op(B) + beta * C, C
// broadcast to the product) through cuBLAS, f32 only. Semantics are the CPU
// kernels' (ops/linalg/matmul_kernels.h); cuBLAS runs in plain f32 (no TF32).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_matmul_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
