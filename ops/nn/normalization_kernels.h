// CPU kernels of BatchNormalization, LayerNormalization,
// InstanceNormalization and their backward ops. One engine serves all three:
// each normalizes "groups" of elements (a channel across the batch, an
// (N, C) plane, a row) and applies a per-channel or per-element affine.
// Statistics accumulate in f64 and are two-pass; results do not depend on
// the thread count (partial sums are reduced in a fixed order).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_normalization_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
