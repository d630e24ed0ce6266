// CUDA kernels of Conv, ConvTranspose, FusedConv (channels-first and
// channels-last, bias, addend Z, every FusedActivation), ConvGradData,
// ConvGradWeight (both also for ConvTranspose's gradients, transposed=1)
// and ConvGradBias; f32, f16 and bf16. The convolutions run through cuDNN
// (cudnn_conv.h). f32 runs with FMA math (TF32 off), so results match the
// CPU's to f32 rounding. f16 and bf16 run natively on tensor cores with
// f32 accumulation (channels-last data in cuDNN's NHWC), the result rounded
// once to the type; a bias, addend or activation is then applied to that
// rounded result (one rounding more than the CPU's). f32 weight gradients
// of 16-bit data widen the operands and run in f32. Semantics, checks and
// messages are the CPU kernels' (ops/nn/conv_kernels.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_conv_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
