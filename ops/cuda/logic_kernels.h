// CUDA kernels of the comparison and logic ops (ops/elementwise/logic_kernels.cc):
// Equal, Less, Greater, LessOrEqual, GreaterOrEqual on f32, f16, bf16,
// int32 and int64 (Equal on bool too); And, Or, Xor, Not on bool; Where
// with X and Y of any dtype. NumPy broadcasting, bool outputs; checks and
// error messages are the CPU kernels'.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_logic_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
