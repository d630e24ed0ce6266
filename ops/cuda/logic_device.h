// The device side of the CUDA comparison and logic kernels
// (logic_device.cu): Equal, Less, Greater, LessOrEqual, GreaterOrEqual on
// numbers and And, Or, Xor on bools, broadcast, with bool outputs; Not;
// Where, which selects elements of any size. Plain arguments only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// The operand types of the comparisons: f16 and bf16 compare as f32 (as
// the CPU loads them), integers and bools as themselves.
enum class CompareType { kFloat32, kFloat16, kBFloat16, kInt32, kInt64, kBool };

enum class CompareOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kAnd, kOr, kXor };

// out[i] = op(a[...], b[...]) for i < count (count > 0).
void launch_compare(CompareOp op, CompareType type, const void* a, const void* b, bool* out, int64_t count,
                    const BroadcastIndexing& indexing, cudaStream_t stream);

// out[i] = !x[i] for i < count (count > 0).
void launch_not(const bool* x, bool* out, int64_t count, cudaStream_t stream);

// out[i] = condition[...] ? x[...] : y[...] over operands 0 (condition), 1
// (x) and 2 (y) of `indexing`; elements of `element_size` bytes (1, 2, 4
// or 8), copied bit for bit.
void launch_where(const bool* condition, const void* x, const void* y, void* out, int64_t count, int element_size,
                  const MultiBroadcastIndexing& indexing, cudaStream_t stream);

}  // namespace weir::cuda
