// CPU kernels of the optimizer updates (in place on the parameter and its
// state; see optimizer_schemas.h) and of ClipByGlobalNorm.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_optimizer_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
