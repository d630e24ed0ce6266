// CPU kernels of the comparison ops, And/Or/Xor/Not and Where.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_logic_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
