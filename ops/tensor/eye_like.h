// EyeLike (ONNX opset 9): schema, gradient rule and CPU kernel.
//
// EyeLike(input) is a matrix of input's shape (which must be 2-D) with ones
// on diagonal k (column - row == k) and zeros elsewhere, of the dtype the
// `dtype` attribute names (an ONNX TensorProto code), else input's. Only the
// input's shape is read, so the rule gives it no gradient.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_eye_like_schema(OpRegistry& registry);
void register_eye_like_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
