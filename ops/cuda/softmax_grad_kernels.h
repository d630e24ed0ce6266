// CUDA kernels of SoftmaxGrad and LogSoftmaxGrad (ops/nn/softmax_kernels.cc):
// f32, f16, bf16, any axis. Lines along the axis are summed by one block
// (contiguous lines) or one thread (strided lines), so results do not
// change from run to run.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_softmax_grad_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
