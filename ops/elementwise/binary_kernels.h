// CPU kernels of the broadcasting binary arithmetic ops: Add, Sub, Mul, Div
// for f32, f64, f16, bf16 and the integer types. f16/bf16 compute in f32.
// Integer Add/Sub/Mul wrap around (two's complement) instead of overflowing;
// integer Div truncates toward zero and reports division by zero as an error.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_binary_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
