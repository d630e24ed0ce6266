// Dropout (ONNX opset 13 semantics) and its backward op DropoutGrad: the
// schemas, the gradient rule and the CPU kernels.
//
// Dropout(data, ratio?, training_mode?) -> (output, mask?). Outside training
// (training_mode absent or false, or ratio 0) the output is the input and the
// mask all true. In training each element is kept with probability
// 1 - ratio and scaled by 1 / (1 - ratio). The random stream is
// counter-based: element i of the k-th run of a kernel draws from
// hash(seed, k, i), so results do not depend on the thread count and a run
// can be replayed. `seed` defaults to 0, so unseeded graphs are reproducible
// too. The gradient rule needs the mask output.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_dropout_schemas(OpRegistry& registry);
void register_dropout_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
