// CPU kernels of the unary elementwise ops: Neg, Relu, Abs, Sign (numeric
// types), Sigmoid, Tanh, Exp, Log, Sqrt (floating types). Identity, a view,
// is with the other views (ops/tensor/tensor_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_unary_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
