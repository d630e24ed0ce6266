// CUDA kernels of LayerNormalization (with or without B, with the optional
// Mean and InvStdDev outputs) and LayerNormGrad, f32, f16 and bf16 (the
// 16-bit types compute in f32, statistics are f32). Semantics, input checks
// and error messages are the CPU kernels' (ops/nn/normalization_kernels.h):
// normalization over axes [axis, rank), Scale and B holding one value per
// normalized element, in X's dtype.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_layer_norm_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
