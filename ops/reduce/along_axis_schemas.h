// Schemas of the ops that walk one axis: ArgMax, ArgMin, CumSum and TopK,
// with the gradient rules of CumSum (a reversed CumSum) and TopK (a scatter
// of dValues to the chosen indices).
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_along_axis_schemas(OpRegistry& registry);

}  // namespace weir
