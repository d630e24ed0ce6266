// Schemas of the losses: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss
// (ONNX semantics: scores [N, C, D...], integer labels [N, D...], optional
// class weights, ignore_index, reduction none|sum|mean) and Weir's
// MeanSquaredError; their gradient rules and the backward ops they emit.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_loss_schemas(OpRegistry& registry);

}  // namespace weir
