// The CUDA kernels of LocalSgdSchedule, LocalSgdAdvance and LocalSgdAverage
// (ops/optimizer/local_sgd.h), with the CPU kernels' semantics and
// arithmetic: the flag, the schedule and the averaged parameter and
// snapshot equal the CPU's bit for bit. Everything is read and written on
// the device; a step below 1 fails the node (as on the CPU) once the
// device work that read it is done.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_local_sgd_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
