// Schemas of the optimizer updates and gradient clipping.
//
// Each update reads a parameter, its gradient, its optimizer state, the
// learning rate (a scalar input, so schedules can feed it) and, for the Adam
// family, the 1-based step (an i64 scalar, for bias correction). It writes
// the parameter and state IN PLACE — outputs alias those inputs — so the
// persistent values are updated without copies (traits kSideEffects and
// kStateful: never removed, never reordered before the parameter's readers
// by anything that honours control inputs).
//
//   SGD(param, grad, lr) -> param                   weight_decay (L2)
//   Momentum(param, grad, velocity, lr) -> param, velocity        momentum, nesterov, weight_decay
//   Adam(param, grad, m, v, lr, step) -> param, m, v              beta1, beta2, epsilon, weight_decay (L2)
//   AdamW(...)  as Adam with decoupled weight decay; LAMB(...) as AdamW with the layer-wise trust ratio
//   ClipByGlobalNorm(grads..., max_norm) -> (clipped grads..., norm)   out of place
//
// Every update takes an optional last input `skip` (bool scalar): when true
// it changes nothing. Dynamic loss scaling (ops/optimizer/loss_scaling.h)
// feeds it the overflow flag, so a step whose gradients overflowed is skipped.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_optimizer_schemas(OpRegistry& registry);

}  // namespace weir
