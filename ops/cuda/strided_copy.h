// Element copies between two strided views of device memory, the one device
// routine behind Transpose, Slice, SliceGrad, Concat, Split, Expand and
// Tile (tensor_device.h): axes of size 1 are dropped and adjacent axes
// merged where both sides allow, then rows that are contiguous on both
// sides move as 16-, 8- or 4-byte words where sizes and alignment allow.
//
//   // out = x[:, 2:5] of an [n, m] x, dense:
//   cuda::copy_strided(ctx, 4, x_ptr + 2, out_ptr, {n, 3}, {m, 1}, {3, 1}, "slice");
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/cuda/tensor_device.h"
#include "ops/kernel.h"

namespace weir::cuda {

// The row-major strides of a dense tensor of `sizes`, in elements.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes);

// The copy's layout for the kernel: axes of size 1 dropped, and an axis
// merged into the one before it when, on both sides, stepping that one once
// steps this one over its whole size. nullopt when more than
// StridedCopy::kMaxRank axes remain.
std::optional<StridedCopy> merged_layout(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                                         const std::vector<int64_t>& dst_strides);

// A transpose that is a batch of 2-D transposes: with axes of size 1
// dropped and axes that stay neighbours in order merged, the output (of
// `sizes`, dense, reading the input with `src_strides`) is [batch, cols,
// rows] of an input [batch, rows, cols] (NCHW <-> NHWC is one, rows = C).
// nullopt otherwise, or when rows or cols is below `min_side`.
struct TransposeTiles {
  int64_t batch = 1, rows = 1, cols = 1;
};
std::optional<TransposeTiles> transpose_tiles(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                                              int64_t min_side);

// Turns a layout of `element_size`-byte elements into one of wider words
// (16, 8, 4 or 2 bytes) when its innermost axis is contiguous on both sides
// and its size, the other strides and both addresses allow; returns the
// word size (element_size when none does).
size_t widen_layout(StridedCopy& layout, size_t element_size, const void* src, const void* dst);

// dst[sum(c * dst_strides)] = src[sum(c * src_strides)] for every
// coordinate c within `sizes`, elements of `element_size` bytes; nothing
// when any size is 0. Enqueued on the step's stream; fails naming the node
// when the merged layout needs more axes than the kernel takes.
void copy_strided(const KernelContext& ctx, size_t element_size, const void* src, void* dst,
                  const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                  const std::vector<int64_t>& dst_strides, const char* what);

}  // namespace weir::cuda
