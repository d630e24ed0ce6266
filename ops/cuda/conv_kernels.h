// CUDA kernels of Conv, ConvTranspose, FusedConv (channels-first and
// channels-last, bias, addend Z, every FusedActivation), ConvGradData,
// ConvGradWeight (both also for ConvTranspose's gradients, transposed=1)
// and ConvGradBias; f32, f16 and bf16. The convolutions run through cuDNN
// in f32 (cudnn_conv.h): f16 and bf16 operands are widened on the device
// and the result rounded once, as the CPU kernel does for f16, and TF32 is
// off, so results match the CPU's to f32 rounding. Semantics, checks and
// messages are the CPU kernels' (ops/nn/conv_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_conv_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
