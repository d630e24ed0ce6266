// CUDA kernels of the elementwise backward ops: ReluGrad, SigmoidGrad,
// TanhGrad (ops/elementwise/backward_kernels.cc), <Activation>Grad for every
// activation with a derivative and ClipGrad (activation_kernels.cc); f32,
// f16 and bf16. Semantics and error messages are the CPU kernels'.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_elementwise_grad_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
