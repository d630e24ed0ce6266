// CPU kernels of Shape, Reshape, Flatten, Squeeze, Unsqueeze (views: no
// copy) and Transpose (any rank, any dtype; copies by element size).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_tensor_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
