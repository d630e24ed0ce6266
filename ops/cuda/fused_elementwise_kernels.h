// The CUDA kernel of FusedElementwise (ops/elementwise/fused_elementwise.h):
// the node's program interpreted per element by one generic device kernel;
// f32 and f64, as on the CPU. Programs of at most FusedProgram::kMaxInputs
// inputs and kMaxSteps steps (fused_elementwise_device.h); a longer one is
// refused when the plan is built, naming the node.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_fused_elementwise_cuda_kernel(KernelRegistry& registry);

}  // namespace weir
