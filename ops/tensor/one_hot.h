// OneHot (ONNX opset 11): schema and CPU kernel.
//
// OneHot(indices, depth, values) -> output of values' dtype, indices' shape
// with a new axis of size depth at `axis` (default -1, innermost). output is
// values[1] where the new coordinate equals the index (negative indices count
// from depth), values[0] elsewhere; an index outside [-depth, depth) gives a
// row of values[0]. Indices and depth may be any numeric type (truncated).
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_one_hot_schema(OpRegistry& registry);
void register_one_hot_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
