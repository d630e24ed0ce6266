// The device side of the CUDA data-movement kernels (tensor_device.cu):
// strided copies (Transpose, Slice and SliceGrad, Concat and Split, Expand,
// Tile), a tiled batched 2-D transpose, Gather and its gradient, TileGrad,
// fills. Launchers take plain arguments; the OpKernels around them are
// tensor_kernels.cc and indexing_kernels.cc. Copies move whole elements by
// their size in bytes, so every dtype is served by the 1/2/4/8-byte kernels
// (16-byte words where rows allow).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace weir::cuda {

// dst[dst_offset(i)] = src[src_offset(i)] for every i < count: i decomposed
// row-major over `sizes`, dotted with each side's strides (in words; a
// stride may be 0, a broadcast, or negative, a reversed slice). Built from
// Weir shapes by strided_layout.h, which merges the axes both sides allow.
struct StridedCopy {
  static constexpr int kMaxRank = 16;
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t src_strides[kMaxRank] = {};
  int64_t dst_strides[kMaxRank] = {};
};

// `word_size` is 1, 2, 4, 8 or 16 bytes; `src` and `dst` point at the
// element of offset 0 and are aligned to the word. count > 0.
void launch_strided_copy(size_t word_size, const void* src, void* dst, const StridedCopy& layout, int64_t count,
                         cudaStream_t stream);

// dst[b][c][r] = src[b][r][c] for a [batch, rows, cols] input, through
// 32x32 tiles in shared memory so reads and writes are both coalesced.
// word_size 1, 2, 4 or 8; every size > 0.
void launch_transpose_tiled(size_t word_size, const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols,
                            cudaStream_t stream);

// Gather along an axis: out[o][i][k] = data[o][indices[i]][k] for o < outer,
// i < count, k < row_words (a row in words of `word_size`: 1, 2, 4, 8 or 16
// bytes). Negative indices count from the back; an index outside
// [-along, along) gives a row of zero bytes (the kernel never reads outside
// `data`), and the smallest such position i is left in `first_bad` (which
// the launch sets to -1 first; it stays -1 when every index is in range).
// outer * count * row_words > 0.
void launch_gather(size_t word_size, const void* data, const void* indices, bool indices_are_i64, void* out,
                   int64_t outer, int64_t along, int64_t count, int64_t row_words, int64_t* first_bad,
                   cudaStream_t stream);

// The element types of the gradients (which add): every numeric dtype.
enum class AddType { kF32, kF64, kF16, kBF16, kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64 };

// GatherGrad: dx[o][j][k] = sum of dy[o][i][k] over i < count with
// indices[i] == j (negatives wrapped), added in increasing i in the element
// type, rounding after each add as the CPU kernel does: the same bits as the
// CPU. Indices out of range add nowhere. The indices are sorted (stably,
// CUB's radix sort) into `workspace` of gather_grad_workspace_bytes(count,
// along) bytes; along and count below 2^31. dx has outer * along * row
// elements, all written.
size_t gather_grad_workspace_bytes(int64_t count, int64_t along);
cudaError_t launch_gather_grad(AddType type, const void* dy, const void* indices, bool indices_are_i64, void* dx,
                               int64_t outer, int64_t along, int64_t count, int64_t row, void* workspace,
                               size_t workspace_bytes, cudaStream_t stream);

// TileGrad: dx[x] = sum over every tile t of dy[t * x_sizes + x], tiles in
// row-major order, added in the element type as the CPU kernel does. `rank`
// <= kMaxTileRank; dx has prod(x_sizes) > 0 elements.
constexpr int kMaxTileRank = 8;
void launch_tile_grad(AddType type, const void* dy, void* dx, int rank, const int64_t* x_sizes, const int64_t* repeats,
                      cudaStream_t stream);

// Writes `count` copies of the `word_size`-byte value whose bytes are the low
// bytes of `bits` (little endian). count > 0.
void launch_fill(size_t word_size, void* dst, int64_t count, uint64_t bits, cudaStream_t stream);

// Writes values[0..count) to dst (count <= kMaxWrittenValues): a shape or a
// size computed on the host, written in stream order without a copy from
// host memory that could outlive the call.
constexpr int kMaxWrittenValues = 16;
void launch_write_i64(int64_t* dst, const int64_t* values, int count, cudaStream_t stream);

}  // namespace weir::cuda
