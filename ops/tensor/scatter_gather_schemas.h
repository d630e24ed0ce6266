// Schemas of the element- and tuple-indexed ops: GatherElements,
// ScatterElements, GatherND, ScatterND (reduction none/add/mul/max/min), their
// gradient rules, and GatherNDGrad, which those emit for batched GatherND.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_scatter_gather_schemas(OpRegistry& registry);

}  // namespace weir
