// Schemas of the elementwise ops: binary arithmetic with NumPy broadcasting
// (Add, Sub, Mul, Div) and unary activations (Relu, Sigmoid, Tanh, Identity).
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_elementwise_schemas(OpRegistry& registry);

}  // namespace weir
