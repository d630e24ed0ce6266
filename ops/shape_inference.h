// Shape-inference helpers that op schemas share.
//
//   weir::Shape c = weir::broadcast_shapes(a, b, ctx);   // NumPy rules, symbolic dims kept
//   weir::infer_same_as_input(ctx);                      // output 0 = input 0's type
//   int64_t axis = weir::normalize_axis(-1, rank, ctx);  // -1 -> rank - 1
//   if (auto k = weir::constant_ints(ctx, 1)) ...         // a constant i32/i64 input's values
//   Dim unknown = weir::symbolic_dim(ctx, 2);             // "node:2", a size known at run time
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/op_schema.h"
#include "core/shape.h"

namespace weir {

// NumPy broadcasting of two shapes. A symbolic dim against 1 stays symbolic;
// two different symbols, or a symbol against a static size > 1, give a fresh
// unknown-rank-free result of the static side (the value must be that size at
// run time). Throws via ctx.fail() when static sizes disagree.
Shape broadcast_shapes(const Shape& a, const Shape& b, const InferenceContext& ctx);

// Output 0 gets input 0's type.
void infer_same_as_input(InferenceContext& ctx);

// For backward ops (dY, X, ...) -> dX: output 0 gets dY's dtype and X's shape.
void infer_gradient_like_input_1(InferenceContext& ctx);

// Maps an axis in [-rank, rank) to [0, rank); fails via ctx otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const InferenceContext& ctx);

// The values of input `index` when it is a constant i32 or i64 tensor, else nullopt.
std::optional<std::vector<int64_t>> constant_ints(const InferenceContext& ctx, size_t index);

// Axes given as the `axes` attribute or as input `index` (ONNX moved them
// from the attribute to an input: Squeeze/Unsqueeze/ReduceSum in opset 13,
// the other Reduce* in 18). Weir's ops take either.
struct AxesArgument {
  enum class Source { kAbsent, kKnown, kRunTime };  // kRunTime: a non-constant input
  Source source = Source::kAbsent;
  std::vector<int64_t> values;                      // when kKnown
};
AxesArgument axes_argument(const InferenceContext& ctx, size_t index);

// A symbolic dim for axis `axis` of the node's output: its size is only known
// when the node runs. Named "<node>:<axis>".
Dim symbolic_dim(const InferenceContext& ctx, size_t axis);

// Fails naming `name` when input `index` has a known static shape that is
// not one element (lr, step, a flag).
void check_scalar_input(const InferenceContext& ctx, size_t index, const char* name);

}  // namespace weir
