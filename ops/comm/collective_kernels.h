// CPU kernels of the collective ops (ops/comm/collective_schemas.h). Each
// calls the communicator that the runtime hands the kernel context; run
// outside such a runtime they fail with a message saying so.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_collective_cpu_kernels(KernelRegistry& registry);
// The same kernels for a device whose communicator takes its memory (NCCL
// for kCuda): they only call the communicator, through the step's stream,
// and copy or zero through the step's backend when a collective is skipped.
void register_collective_kernels(KernelRegistry& registry, DeviceType device);

}  // namespace weir
