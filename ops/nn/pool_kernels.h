// CPU kernels of MaxPool, AveragePool, their backward ops, GlobalAveragePool
// and GlobalMaxPool: plain loops over (N, C) planes, run in parallel;
// f16/bf16 compute in f32.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_pool_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
