// Schemas of the parametrized activations and other unary float ops
// (LeakyRelu, Elu, Selu, Gelu, Erf, Softplus, Softsign, HardSigmoid,
// HardSwish, Sin, Cos, Reciprocal; Floor, Ceil, Round; IsNaN, IsInf; Clip)
// with gradient rules, and of their backward ops `<Op>Grad(dY, X)` and
// ClipGrad(dY, X, min, max).
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_activation_schemas(OpRegistry& registry);

}  // namespace weir
