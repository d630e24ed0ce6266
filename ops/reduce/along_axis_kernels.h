// CPU kernels of ArgMax, ArgMin, CumSum and TopK.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_along_axis_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
