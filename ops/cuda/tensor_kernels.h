// CUDA kernels of the shape ops: Transpose (any rank and perm; a batch of
// 2-D transposes goes through shared-memory tiles), Reshape, Squeeze and
// Unsqueeze (views: their shape or axes input, in device memory, is read on
// the host and the CPU kernel's own logic decides the view), Shape and Size
// (i64 outputs in device memory). Every dtype, as on the CPU
// (ops/tensor/tensor_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_tensor_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
