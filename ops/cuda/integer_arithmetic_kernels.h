// CUDA kernels of Add, Sub, Mul, Div and Mod for i32 and i64 tensors, with
// broadcasting and the CPU kernels' integer semantics
// (integer_arithmetic_device.h), so that index and step arithmetic (the
// gradient-merge phase Mod(step, k), shape computations that stay in the
// graph) runs where its inputs live instead of on the host. A zero divisor
// fails the node as on the CPU, naming the divisor element, once the device
// work is done.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_integer_arithmetic_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
