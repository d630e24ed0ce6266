// Schemas of the ops that select, join and create tensors: Concat, Split,
// Slice, Gather, Expand, Tile, ConstantOfShape, Range, Size, Constant and
// ZerosLike, with gradient rules where differentiable, and the backward ops
// ConcatGrad(dY, inputs...), SliceGrad(dY, data, starts, ends[, axes, steps])
// and GatherGrad(dY, data, indices), which read only the shapes of the
// forward inputs they take.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_indexing_schemas(OpRegistry& registry);

}  // namespace weir
