// Schemas of the linear-algebra ops: MatMul (NumPy matmul semantics, batched
// and broadcast) and Gemm (alpha * op(A) * op(B) + beta * C).
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_linalg_schemas(OpRegistry& registry);

}  // namespace weir
