// CPU kernels of Conv, ConvTranspose, ConvGradData, ConvGradWeight and
// ConvGradBias. f32 and bf16 run through oneDNN (DnnlConv); f16 is widened
// to f32 around it; f64 runs the direct loops of conv_problem.h.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_conv_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
