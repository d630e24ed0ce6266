// CUDA kernels of the indexing ops: Concat, ConcatGrad, Split, Slice,
// SliceGrad, Gather, GatherGrad, Expand, Tile, TileGrad, ConstantOfShape and
// ZerosLike, for the dtypes the CPU registers (ops/tensor/indexing_kernels.h).
// Small inputs that decide shapes (Split's split, Slice's starts, ends, axes
// and steps, Expand's shape, Tile's repeats, ConstantOfShape's shape) are
// read on the host; indices stay on the device.
//
// Where the GPU differs from the CPU: an index out of range in Gather gives
// a row of zeros, and in GatherGrad adds nowhere, instead of failing (the
// indices are not read on the host). GatherGrad is deterministic: indices
// are sorted stably and each row sums its sources in order, the CPU's order.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_indexing_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
