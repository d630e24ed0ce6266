// What the elementwise launchers share: the launch shape of a grid-stride
// loop over `count` elements (launch_shape.cuh), and the dispatch from the runtime element
// type and op to the kernel template instantiated for them.
//
//   dispatch_type(type, [&]<typename T>() {
//     dispatch_op<UnaryOp, UnaryOp::kExp, UnaryOp::kLog>(op, [&]<UnaryOp kOp>() {
//       my_kernel<T, kOp><<<blocks_for(count), kThreads, 0, stream>>>(...);
//     });
//   });
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"
#include "ops/cuda/launch_shape.cuh"

namespace weir::cuda {

template <typename F>
void dispatch_type(ElementType type, F&& f) {
  switch (type) {
    case ElementType::kFloat32: return f.template operator()<float>();
    case ElementType::kFloat16: return f.template operator()<__half>();
    case ElementType::kBFloat16: return f.template operator()<__nv_bfloat16>();
  }
}

// The offsets of output element i in the two operands of `indexing`. One
// axis (same shapes, a scalar against a tensor) needs no 64-bit division.
__device__ inline void broadcast_offsets(const BroadcastIndexing& indexing, int64_t i, int64_t& a, int64_t& b) {
  if (indexing.rank == 1) {
    a = i * indexing.stride_a[0];
    b = i * indexing.stride_b[0];
    return;
  }
  a = 0;
  b = 0;
  for (int axis = indexing.rank - 1; axis >= 0; --axis) {
    const int64_t coordinate = i % indexing.sizes[axis];
    i /= indexing.sizes[axis];
    a += coordinate * indexing.stride_a[axis];
    b += coordinate * indexing.stride_b[axis];
  }
}

// The coordinates of output element i over the axes of `indexing`.
__device__ inline void broadcast_coordinates(const MultiBroadcastIndexing& indexing, int64_t i,
                                             int64_t (&coordinates)[MultiBroadcastIndexing::kMaxRank]) {
  for (int axis = indexing.rank - 1; axis >= 0; --axis) {
    coordinates[axis] = indexing.rank == 1 ? i : i % indexing.sizes[axis];
    i = indexing.rank == 1 ? 0 : i / indexing.sizes[axis];
  }
}

// Operand k's offset at `coordinates`.
__device__ inline int64_t operand_offset(const MultiBroadcastIndexing& indexing, int k,
                                         const int64_t (&coordinates)[MultiBroadcastIndexing::kMaxRank]) {
  int64_t offset = 0;
  for (int axis = 0; axis < indexing.rank; ++axis) offset += coordinates[axis] * indexing.strides[k][axis];
  return offset;
}

// Calls f.operator()<kOp>() for the one of kOps that equals `op`; nothing
// for an op not listed (the kernels' registrations list what they launch).
template <typename Op, Op... kOps, typename F>
void dispatch_op(Op op, F&& f) {
  (void)((op == kOps && (f.template operator()<kOps>(), true)) || ...);
}

}  // namespace weir::cuda
