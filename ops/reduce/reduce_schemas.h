// Schemas of the reductions ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare and ReduceLogSumExp (axes
// as an attribute; the ONNX importer turns an axes input into it), their
// gradient rules, and the backward ops those emit: BroadcastReduced and
// ReduceExtremumGrad.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_reduce_schemas(OpRegistry& registry);

}  // namespace weir
