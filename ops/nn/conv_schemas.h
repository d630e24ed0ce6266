// Schemas of Conv and ConvTranspose (ONNX semantics: 1 to 3 spatial axes,
// groups, dilations, pads, auto_pad; ConvTranspose also output_padding and
// output_shape) and of the backward ops their gradient rules emit:
// ConvGradData(dY, W, X), ConvGradWeight(dY, X, W) and ConvGradBias(dY).
// The backward ops carry the forward node's attributes plus `transposed`.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_conv_schemas(OpRegistry& registry);

}  // namespace weir
