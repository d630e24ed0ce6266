// CPU kernels of the ops in scatter_gather_schemas.h. Indices may be
// negative (counted from the end); one out of range fails naming the node.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_scatter_gather_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
