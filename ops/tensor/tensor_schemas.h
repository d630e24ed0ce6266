// Schemas of the tensor-manipulation ops: Shape, Reshape, Flatten, Squeeze,
// Unsqueeze and Transpose, with their gradient rules.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_tensor_schemas(OpRegistry& registry);

}  // namespace weir
