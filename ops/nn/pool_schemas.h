// Schemas of MaxPool, AveragePool (ONNX semantics: 1 to 3 spatial axes,
// strides, pads, auto_pad, ceil_mode, dilations for MaxPool,
// count_include_pad for AveragePool, MaxPool's optional Indices),
// GlobalAveragePool and GlobalMaxPool, and the backward ops MaxPoolGrad(dY, X)
// and AveragePoolGrad(dY, X), which carry the forward node's attributes.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_pool_schemas(OpRegistry& registry);

}  // namespace weir
