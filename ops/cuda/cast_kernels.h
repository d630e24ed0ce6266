// The CUDA kernel of Cast: every dtype to every dtype, with the CPU kernel's
// rounding and saturation rules (ops/cast/cast.h; the device code is
// cast_device.cu).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_cast_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
