// The device side of the CUDA integer arithmetic kernels
// (integer_arithmetic_device.cu): Add, Sub, Mul, Div and Mod of i32 and i64
// with broadcasting, as ops/elementwise/binary_kernels.cc computes them:
// Add, Sub and Mul wrap; Div truncates (min / -1 wraps to min); Mod takes
// the divisor's sign (fmod=0, Python's %) or the dividend's (fmod=1, C's
// %), and x % -1 is 0. A zero divisor makes the element 0 and is reported
// (the CPU fails the node before it computes anything).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

enum class IntegerOp { kAdd, kSub, kMul, kDiv, kMod, kFmod };

// out[i] = a[.] op b[.] for the `count` elements of the broadcast output;
// `wide`: i64 elements, else i32.
void launch_integer_binary(IntegerOp op, bool wide, const void* a, const void* b, void* out, int64_t count,
                           const BroadcastIndexing& indexing, cudaStream_t stream);

// *first_zero = the first element of `divisor` (count elements) that is 0,
// or -1: for Div and Mod's check, enqueued before their launch.
void launch_find_zero_divisor(bool wide, const void* divisor, int64_t count, int64_t* first_zero, cudaStream_t stream);

}  // namespace weir::cuda
