// Hardmax (ONNX opset 13): schema and CPU kernel.
//
// Along `axis` (default -1), the first maximum of each line becomes 1 and
// every other element 0. A NaN counts as larger than any number (the first
// NaN of a line wins, as NumPy's argmax has it). Flat almost everywhere: its
// gradient rule contributes no gradient.
//
//   register_hardmax_schema(op_registry);
//   register_hardmax_cpu_kernel(kernel_registry);
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_hardmax_schema(OpRegistry& registry);
void register_hardmax_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
