// CPU kernels of the activations defined in activation_functions.h
// (LeakyRelu, Elu, Selu, Gelu, Erf, Softplus, Softsign, HardSigmoid,
// HardSwish, Sin, Cos, Reciprocal, Floor, Ceil, Round) and of their `<Op>Grad`
// backward ops; of Clip and ClipGrad; and of IsNaN and IsInf.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_activation_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
