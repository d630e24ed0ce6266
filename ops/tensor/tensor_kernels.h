// CPU kernels of Shape, Reshape, Flatten, Identity, Squeeze, Unsqueeze
// (views: no copy) and Transpose (any rank, any dtype; copies by element
// size).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_tensor_cpu_kernels(KernelRegistry& registry);

// The views whose outputs depend on attributes and the input's sizes alone
// (Flatten, Identity): the output shares the input's memory and no element
// is read, so the same kernel serves any device. Registered for the CPU by
// register_tensor_cpu_kernels, and for each accelerator by its backend's
// kernel registration. (Reshape, Squeeze and Unsqueeze may read a shape or
// axes tensor, which would live in device memory: not here.)
void register_view_kernels(KernelRegistry& registry, DeviceType device);

}  // namespace weir
