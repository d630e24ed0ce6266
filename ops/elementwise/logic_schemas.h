// Schemas of the comparison ops (Equal, Less, Greater, LessOrEqual,
// GreaterOrEqual: bool results, NumPy broadcasting), the logical ops (And,
// Or, Xor, Not on bool) and Where(condition, X, Y) with its gradient rule.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_logic_schemas(OpRegistry& registry);

}  // namespace weir
