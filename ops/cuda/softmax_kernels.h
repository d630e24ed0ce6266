// CUDA kernels of Softmax and LogSoftmax along one axis (opset-13
// semantics, `axis` default -1), max-subtracted for stability; f32, f16 and
// bf16 (the 16-bit types compute in f32). Semantics are the CPU kernels'
// (ops/nn/softmax_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_softmax_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
