// Schemas of the elementwise ops: binary arithmetic with NumPy broadcasting
// (Add, Sub, Mul, Div), unary ops (Neg, Relu, Sigmoid, Tanh, Identity) with
// their gradient rules, and the backward ops those rules emit (ReluGrad,
// SigmoidGrad, TanhGrad, SumToShape).
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_elementwise_schemas(OpRegistry& registry);
void register_elementwise_backward_schemas(OpRegistry& registry);

}  // namespace weir
