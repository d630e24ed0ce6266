// CPU kernels of Softmax and LogSoftmax along one axis (opset-13 semantics),
// and of their backward ops SoftmaxGrad(dY, Y) and LogSoftmaxGrad(dY, Y).
// Max-subtracted for stability; f16/bf16 compute in f32.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_softmax_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
