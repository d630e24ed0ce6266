// CPU kernels of the ops in indexing_schemas.h. They move elements as bytes
// (every dtype, bool included); the gradient kernels that add (GatherGrad)
// work on the numeric types.
//
// The shape arithmetic and input checks below are the kernels' own, shared
// with the CUDA kernels of the same ops (ops/cuda/indexing_kernels.cc) so
// that both compute one output shape and fail with one message.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "ops/kernel.h"
#include "ops/tensor/indexing.h"

namespace weir {

void register_indexing_cpu_kernels(KernelRegistry& registry);

// The node's "axis" attribute, or `fallback` where it has none.
int64_t indexing_axis(const Node& node, int64_t fallback);
// Product of sizes[begin, end).
int64_t size_product(const std::vector<int64_t>& sizes, size_t begin, size_t end);

// Concat: checks that every input matches input 0 (dtype, rank, sizes) off
// `axis`; the joined sizes and the inputs as the pieces to join.
struct ConcatInputs {
  std::vector<int64_t> sizes;
  std::vector<const Tensor*> pieces;
};
ConcatInputs concat_inputs(const KernelContext& ctx, int64_t axis);
// ConcatGrad(dY, inputs...): allocates the outputs, pieces of dY along
// `axis` shaped like inputs 1.., uninitialized.
std::vector<const Tensor*> allocate_concat_grad_pieces(KernelContext& ctx, const Tensor& dy, int64_t axis);
// Split: each output's size along `axis` (of size `along`): `given` (the
// split input, checked to have one entry per output and to sum to `along`),
// else equal parts with a smaller last one.
std::vector<int64_t> split_parts(const KernelContext& ctx, const std::vector<int64_t>* given, int64_t along, size_t outputs);
// Allocates Split's outputs: x's sizes with `axis` set to parts[i], uninitialized.
std::vector<const Tensor*> allocate_split_pieces(KernelContext& ctx, const Tensor& x, int64_t axis,
                                                 const std::vector<int64_t>& parts);

// Reads a small integer input (input index, what to call it in a message).
using IndexInputFn = std::function<std::vector<int64_t>(size_t, const char*)>;
// Slice(data, starts, ends[, axes, steps]) from input `first` on (1 for
// SliceGrad, whose input 0 is dY): the resolved axes of `data_sizes`.
std::vector<SliceAxis> slice_axes(const KernelContext& ctx, size_t first, const std::vector<int64_t>& data_sizes,
                                  const IndexInputFn& read);
// SliceGrad: checks dY against the slice's sizes.
void check_slice_grad(const KernelContext& ctx, const Tensor& dy, const std::vector<int64_t>& slice_sizes);

// Gather's output sizes: data's with `axis` replaced by the indices' sizes.
std::vector<int64_t> gather_sizes(const std::vector<int64_t>& data_sizes, int64_t axis,
                                  const std::vector<int64_t>& indices_sizes);
// GatherGrad: checks that dY holds the outer * count * row gathered elements.
void check_gather_grad(const KernelContext& ctx, const Tensor& dy, int64_t outer, int64_t count, int64_t row);

// Expand: x's sizes broadcast with `shape`.
std::vector<int64_t> expand_sizes(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& shape);
// Tile: x's sizes times `repeats` (one non-negative entry per axis).
std::vector<int64_t> tile_sizes(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& repeats);
// TileGrad: checks that dY's sizes are multiples of X's.
void check_tiling(const KernelContext& ctx, const Tensor& dy, const Tensor& x);

// ConstantOfShape's "value" attribute (one element), f32 0 without one.
Tensor constant_of_shape_value(const Node& node);
// ConstantOfShape: checks the requested shape.
void check_constant_shape(const KernelContext& ctx, const std::vector<int64_t>& shape);

}  // namespace weir
