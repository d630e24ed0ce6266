// CPU kernels of the collective ops (ops/comm/collective_schemas.h). Each
// calls the communicator that the runtime hands the kernel context; run
// outside such a runtime they fail with a message saying so.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_collective_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
