// The CUDA kernel of GradientMerge (ops/optimizer/gradient_merge.h), f32,
// with the CPU kernel's semantics and rounding: the merged gradient and the
// accumulator equal the CPU's bit for bit. The apply flag is read on the
// device; the accumulator is updated in place.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_gradient_merge_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
