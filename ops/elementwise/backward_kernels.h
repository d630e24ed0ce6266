// CPU kernels of the backward ops that elementwise gradient rules emit:
// ReluGrad(dY, X), SigmoidGrad(dY, Y), TanhGrad(dY, Y) and SumToShape(X, Ref),
// which sums X over the axes along which Ref was broadcast.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_elementwise_backward_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
