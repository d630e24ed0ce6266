// CPU kernels of the unary elementwise ops: Neg, Relu, Abs, Sign (numeric
// types), Sigmoid, Tanh, Exp, Log, Sqrt (floating types) and Identity (every
// type).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_unary_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
