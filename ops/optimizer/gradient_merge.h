// Gradient merge (Fleet's gradient_merge): a rank accumulates k micro-steps'
// gradients before it communicates and applies them.
//
//   GradientMerge(accumulator, grad, apply) -> merged           accumulator in place
//     apply false: accumulator += grad            (merged: the running sum, unused)
//     apply true:  merged = (accumulator + grad) * scale, accumulator = 0
//
// `scale` is 1/k for the average of the k micro-steps (Fleet's avg, the
// default) or 1 for their sum. `apply` is a bool scalar; the pass
// (passes/training/gradient_merge.h) computes it from the step number and
// makes the communication and the updates skip on the steps it is false.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

// What every backend's kernel checks, failing naming the input: f32
// accumulator and gradient of one shape, a bool scalar apply.
void check_gradient_merge_inputs(const KernelContext& ctx);

void register_gradient_merge_schemas(OpRegistry& registry);
void register_gradient_merge_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
