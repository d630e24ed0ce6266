// ReverseSequence (ONNX opset 10): schema, gradient rule and CPU kernel.
//
// ReverseSequence(input, sequence_lens) reverses, for each batch entry b
// (along batch_axis), the first sequence_lens[b] entries along time_axis and
// copies the rest. batch_axis and time_axis are 0 and 1 in either order; the
// input has rank >= 2; each length lies in [0, time size]. The op is its own
// inverse, so its gradient is ReverseSequence of dY with the same lengths.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_reverse_sequence_schema(OpRegistry& registry);
void register_reverse_sequence_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
