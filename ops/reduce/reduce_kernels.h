// CPU kernels of the Reduce* ops and of their backward ops BroadcastReduced
// and ReduceExtremumGrad. Floating types accumulate in f64 and integers in
// i64 (wrapping), over the input in order: results do not depend on the
// thread count. Reductions over an empty set give the op's identity (sum 0,
// product 1, max -inf / lowest integer); a mean over one is NaN.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/kernel.h"
#include "ops/reduce/reduce_axes.h"
#include "ops/reduce/reduction.h"

namespace weir {

void register_reduce_cpu_kernels(KernelRegistry& registry);

// Every Reduce* op and its dtypes (floating only for the ones that take a
// root or a log), as the CPU and CUDA kernels register them.
struct ReduceOpEntry {
  const char* name;
  Reduction reduction;
  bool floating_only;
};
const std::vector<ReduceOpEntry>& reduce_ops();
// The types the reduce kernels take: the floating ones, and those plus i32/i64.
const std::vector<DType>& reduce_floating_types();
const std::vector<DType>& reduce_numeric_types();

// BroadcastReduced(dY, X) and ReduceExtremumGrad(dY, X, Y) over the
// `axes` of X, checked the same way by the CPU and CUDA kernels.
struct ReduceBackwardShape {
  std::vector<bool> reduced;  // per axis of X
  std::vector<int64_t> kept;  // X's sizes with the reduced axes 1
  int64_t outputs = 1;        // elements of the reduction's result
  int64_t count = 0;          // inputs folded into each output
};
// Resolves `axes` over X (input 1) and checks dY (input 0) and, for an
// extremum, Y (input 2) against the reduction of X.
ReduceBackwardShape reduce_backward_shape(const KernelContext& ctx, const ReduceAxes& axes, bool extremum);
// The backward node's "mean" attribute: dY is divided by the count.
bool reduce_backward_mean(const Node& node);

}  // namespace weir
