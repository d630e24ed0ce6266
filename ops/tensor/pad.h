// Pad (ONNX opset 13, with opset 18's optional `axes` input and opset 19's
// wrap mode) and its backward op PadGrad: schemas, gradient rule, CPU kernels.
//
// Pad(data, pads, constant_value?, axes?) -> output. pads holds the begin
// pads of every listed axis, then the end pads; negative pads crop. Modes:
// constant (constant_value, default 0), edge (repeat the border element),
// reflect (mirror without repeating the border) and wrap (periodic).
// PadGrad(dY, data, pads, axes?) adds each output element's gradient to the
// input element it was copied from (several, at the borders of edge/reflect/wrap).
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_pad_schemas(OpRegistry& registry);
void register_pad_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
