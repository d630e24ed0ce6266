// CPU kernels of the ops in indexing_schemas.h. They move elements as bytes
// (every dtype, bool included); the gradient kernels that add (GatherGrad)
// work on the numeric types.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_indexing_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
