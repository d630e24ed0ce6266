// Schemas of BatchNormalization (ONNX opset 15: inference, and training mode
// with batch statistics and running-statistics outputs),
// LayerNormalization (opset 17: over axes [axis, rank), optional Mean and
// InvStdDev outputs) and InstanceNormalization, with gradient rules, and of
// the backward ops they emit: BatchNormGrad, LayerNormGrad and
// InstanceNormGrad, each giving (dX, dScale, dB) and recomputing the
// statistics from X rather than keeping them alive from the forward pass.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_normalization_schemas(OpRegistry& registry);

}  // namespace weir
