// Trilu (ONNX opset 14): schema, gradient rule and CPU kernel.
//
// Trilu(input, k?) keeps, in each matrix of the last two axes, the elements
// on and above diagonal k (upper=1: column - row >= k) or on and below it
// (upper=0: column - row <= k), and zeroes the rest. Its gradient is the same
// Trilu of dY.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_trilu_schema(OpRegistry& registry);
void register_trilu_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
