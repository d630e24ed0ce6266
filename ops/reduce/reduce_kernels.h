// CPU kernels of the Reduce* ops and of their backward ops BroadcastReduced
// and ReduceExtremumGrad. Floating types accumulate in f64 and integers in
// i64 (wrapping), over the input in order: results do not depend on the
// thread count. Reductions over an empty set give the op's identity (sum 0,
// product 1, max -inf / lowest integer); a mean over one is NaN.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_reduce_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
