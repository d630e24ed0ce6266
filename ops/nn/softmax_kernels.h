// CPU kernels of Softmax and LogSoftmax along one axis (opset-13 semantics),
// and of their backward ops SoftmaxGrad(dY, Y) and LogSoftmaxGrad(dY, Y).
// Max-subtracted for stability; f16/bf16 compute in f32.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "ops/axis_lines.h"
#include "ops/kernel.h"

namespace weir {

void register_softmax_cpu_kernels(KernelRegistry& registry);

// SoftmaxGrad / LogSoftmaxGrad(dY, Y): checks that dY has Y's type and
// shape and splits Y at `axis` (shared with the CUDA kernel).
AxisSplit softmax_grad_split(const KernelContext& ctx, const Tensor& dy, const Tensor& y, int64_t axis);

}  // namespace weir
