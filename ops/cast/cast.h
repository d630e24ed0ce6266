// Cast: the Cast op's schema, gradient rule and CPU kernel (every dtype to
// every dtype). Float to integer truncates toward zero and saturates at the
// target's limits; NaN becomes 0 (C++ leaves both undefined, so Weir
// defines them). f16/bf16 round to nearest even.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_cast_schema(OpRegistry& registry);
void register_cast_cpu_kernel(KernelRegistry& registry);

// Converts `count` elements from `in` (of `from`) to `out` (of `to`).
void cast_elements(DType from, const void* in, DType to, void* out, int64_t count);

// Cast's "to" attribute; throws naming the node unless it is a Weir dtype
// code. Shared with the CUDA kernel (ops/cuda/cast_kernels.cc).
DType cast_target(const Node& node);

}  // namespace weir
