// CPU kernels of MatMul (NumPy semantics: batched, broadcast batch axes,
// 1-D operands promoted) and Gemm (alpha * op(A) * op(B) + beta * C).
// f32, bf16 and f16 go through oneDNN (see dnnl_matmul.h); f64 and the
// integer types use a plain loop that accumulates in f64 / i64.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_matmul_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
