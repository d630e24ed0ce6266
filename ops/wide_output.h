// Wide outputs: gradient ops that sum over the batch may write f32 while
// reading bf16 or f16.
//
//   schema.output("Y", "").attr(kOutputDtypeAttr, AttrType::kInt, Attribute(int64_t{0}));
//   ctx.set_output_type(0, {inferred_output_dtype(ctx, a->dtype), shape});      // inference
//   DType out = kernel_output_dtype(ctx, a.dtype());                            // kernel
//
// Under mixed precision a weight's gradient is a sum over every example of
// the batch. Rounded to bf16 it keeps 8 bits, so a data-parallel rank's
// half-batch sum, rounded, then averaged over ranks differs from the
// whole-batch sum rounded once by up to a bf16 ulp — and the optimizer
// (Adam above all) turns that into different weights. Written in f32, the
// sums agree to f32 rounding, and the Cast back to f32 that followed them
// disappears (passes/precision/f32_gradient_accumulation.h sets the
// attribute). The attribute holds a DType code; 0 (the default) means "the
// inputs' dtype".
#pragma once

#include "core/dtype.h"
#include "core/graph.h"
#include "core/op_schema.h"

namespace weir {

class KernelContext;

inline constexpr const char* kOutputDtypeAttr = "output_dtype";

// Whether an op reading `input` may write `output`: the same dtype, or f32
// from bf16 or f16.
bool can_widen(DType input, DType output);

// The output dtype a node's attribute asks for, given its inputs' dtype;
// fails naming the node when the attribute asks for anything can_widen refuses.
DType inferred_output_dtype(InferenceContext& ctx, DType input);
DType kernel_output_dtype(const KernelContext& ctx, DType input);

}  // namespace weir
