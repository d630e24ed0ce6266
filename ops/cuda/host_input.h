// A small input that a CUDA kernel reads on the host (a shape, starts and
// ends, axes, repeats): a constant's own host tensor when the node reads a
// graph constant (most shape inputs are), so no run waits for a copy; else
// the device tensor copied back on the step's stream (cuda::host_copy,
// which waits for it).
#pragma once

#include <cstddef>

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir::cuda {

Tensor host_input(const KernelContext& ctx, size_t index, const char* what);

}  // namespace weir::cuda
