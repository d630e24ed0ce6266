// Helpers that gradient rules of several op families share.
//
//   // in a rule: the gradient of a broadcast input, summed back to its shape
//   Value* da = sum_to_input_shape(ctx, full_grad, /*index=*/0, /*broadcast=*/true);
#pragma once

#include "core/graph.h"
#include "core/op_schema.h"

namespace weir {

// `grad` summed over the axes along which input `index` was broadcast
// (a SumToShape node), or `grad` itself when `broadcast` is false.
Value* sum_to_input_shape(GradientContext& ctx, Value* grad, size_t index, bool broadcast);

// A scalar constant of `dtype` holding `value`, added to the graph. Throws
// weir::Error(kInvalidArgument) naming the value and dtype when an integer
// dtype cannot hold it (NaN, infinite, out of range): such values come from
// model files (ONNX Pad and Clip attributes), and converting them is
// undefined behaviour.
Value* scalar_constant(Graph& graph, DType dtype, double value, const std::string& name_prefix);

}  // namespace weir
