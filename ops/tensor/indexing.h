// Index arithmetic shared by the indexing kernels: reading i64/i32 index
// tensors, and resolving ONNX Slice parameters against concrete sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir {

// The values of an integer tensor (i32 or i64) as int64; fails naming `what` otherwise.
std::vector<int64_t> index_values(const KernelContext& ctx, const Tensor& t, const char* what);
// The values of a floating-point tensor (f32, f64, f16, bf16) as doubles
// (boxes, grids, scores); fails naming `what` otherwise.
std::vector<double> float_values(const KernelContext& ctx, const Tensor& t, const char* what);

// One sliced axis: elements start, start + step, ... (count of them).
struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
};

// Resolves Slice(starts, ends, axes, steps) over `sizes` as ONNX does:
// negative starts/ends count from the end, then clamp ([0, dim] for positive
// steps, [-1, dim-1] for negative); axes default to 0..n-1, steps to 1.
// Calls `fail` (which must throw: a context's fail) on a zero step, a
// repeated or out-of-range axis, or lengths that differ.
using FailFn = std::function<void(const std::string&)>;
std::vector<SliceAxis> resolve_slice(const std::vector<int64_t>& sizes, const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& ends, const std::vector<int64_t>* axes,
                                     const std::vector<int64_t>* steps, const FailFn& fail);

// Copies between a dense tensor of `sizes` and the strided slice `axes` of
// it, element by element of `element_size` bytes: gather (slice -> dense
// `out`) or scatter (dense `in` -> slice positions of `out`).
void copy_slice(const std::vector<int64_t>& sizes, const std::vector<SliceAxis>& axes, size_t element_size,
                const void* in, void* out, bool scatter);

}  // namespace weir
