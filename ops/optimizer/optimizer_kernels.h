// CPU kernels of the optimizer updates (in place on the parameter and its
// state; see optimizer_schemas.h) and of ClipByGlobalNorm.
//
// The input checks below are shared with the CUDA kernels of the same ops
// (ops/cuda/optimizer_kernels.cc): one message each.
#pragma once

#include <cstddef>

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir {

void register_optimizer_cpu_kernels(KernelRegistry& registry);

// An update's parameter (input 0), gradient and `num_state` state tensors:
// checks that they have one dtype and shape and share no memory (the
// update reads and writes them element by element as separate buffers).
void check_update_inputs(const KernelContext& ctx, size_t num_state);
// The input index of an update's optional skip flag: after the parameter,
// gradient, state, lr and (with two state tensors) step.
size_t update_skip_index(size_t num_state);
// Checks an update's skip flag: a bool scalar.
void check_skip_flag(const KernelContext& ctx, const Tensor& flag);
// Assign(target, value): checks that value has the target's dtype and shape.
void check_assign(const KernelContext& ctx, const Tensor& target, const Tensor& value);

}  // namespace weir
