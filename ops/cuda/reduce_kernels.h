// CUDA kernels of the reductions: ReduceSum, ReduceMean, ReduceMax,
// ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum
// and ReduceLogSumExp (axes as an attribute or input, keepdims,
// noop_with_empty_axes), SumToShape (a broadcast's gradient, with its f32
// wide output), and BroadcastReduced and ReduceExtremumGrad (their
// gradients). The CPU's dtypes (ops/reduce/reduce_kernels.h): f32, f64,
// f16, bf16, and i32 and i64 where it registers them. Accumulates as the CPU
// does (f64 for floating types, wrapping i64 for integers) in an order fixed
// by the shapes: deterministic, no atomics (reduce_device.h).
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_reduce_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
