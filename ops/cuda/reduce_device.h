// The device side of the CUDA reductions (reduce_device.cu): Reduce* over
// any set of axes, SumToShape (a Reduce sum to a broadcast operand's shape)
// and the broadcast back of BroadcastReduced and ReduceExtremumGrad.
//
// Floating types accumulate in f64 and integers in i64 (wrapping), as the
// CPU kernels do (ops/reduce/reduce_kernels.h), so results differ from the
// CPU's only by the order of the additions. The order is fixed by the
// shapes alone (one group of threads per output, a tree in registers and
// shared memory, partial results of a long reduction combined in order by a
// second kernel): the same input gives the same bits on every run. No
// atomics.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/reduce/reduction.h"

namespace weir::cuda {

enum class ReduceType { kF32, kF64, kF16, kBF16, kI32, kI64 };

using weir::Reduction;  // ops/reduce/reduction.h, the CPU kernels' enum

// Output o (row-major over the kept axes) folds input elements
// kept_offset(o) + reduced_offset(r) for r < count, each offset the
// coordinates dotted with the strides (in elements). Axes of size 1 are
// left out and neighbours of the same kind merged by the caller.
struct ReduceLayout {
  static constexpr int kMaxRank = 8;
  int kept_rank = 0;
  int reduced_rank = 0;
  int64_t kept_sizes[kMaxRank] = {};
  int64_t kept_strides[kMaxRank] = {};
  int64_t reduced_sizes[kMaxRank] = {};
  int64_t reduced_strides[kMaxRank] = {};
  int64_t outputs = 1;  // product of kept_sizes
  int64_t count = 1;    // product of reduced_sizes
};

// Device memory launch_reduce needs for this reduction (0: none).
size_t reduce_workspace_bytes(Reduction reduction, const ReduceLayout& layout);

// y[o] = the reduction of x's elements of output o, finished (mean, sqrt,
// log...) and stored as `out_type` (the input's type, or f32 for SumToShape's
// wide output). An empty set gives the reduction's identity (sum 0, product
// 1, max -inf or the integer type's lowest), a mean over none NaN (0 for
// integers). layout.outputs > 0; `workspace` holds reduce_workspace_bytes.
void launch_reduce(Reduction reduction, ReduceType in_type, const void* x, ReduceType out_type, void* y,
                   const ReduceLayout& layout, void* workspace, cudaStream_t stream);

// dx[p] = dy[slot(p)] (divided by `count` when `mean`; zero where x[p] !=
// y[slot(p)] when `extremum`), p decomposed over `sizes` and dotted with
// `dy_strides` (0 along reduced axes). Computes in the CPU's compute type.
struct BroadcastBackLayout {
  static constexpr int kMaxRank = 16;
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t dy_strides[kMaxRank] = {};
};
void launch_broadcast_reduced(ReduceType type, const void* dy, const void* x, const void* y, void* dx,
                              const BroadcastBackLayout& layout, int64_t total, int64_t count, bool mean,
                              bool extremum, cudaStream_t stream);

}  // namespace weir::cuda
