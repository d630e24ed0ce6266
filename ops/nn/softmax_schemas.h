// Schemas of Softmax and LogSoftmax along one axis, their gradient rules,
// and the backward ops SoftmaxGrad and LogSoftmaxGrad.
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_softmax_schemas(OpRegistry& registry);

}  // namespace weir
