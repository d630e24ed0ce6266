// The ops through which a worker's graph trains with parameter servers:
// each calls the ParameterClient (core/parameter_client.h) that the runtime
// puts in the kernel context (SessionOptions::parameter_client).
//
//   PsPullSparse(ids, round?) -> rows          rows[..., width] of a sparse table for ids (int32/int64,
//                                              any shape); each distinct id travels once
//   PsPushSparse(ids, grad, lr, round?)        adds grad[..., width] to the ids' rows through the
//                                              table's rule (equal ids summed)
//   PsPullDense(param, round?) -> param_out    overwrites the parameter with the dense table, in place
//   PsPushDense(grad, lr, round?)              pushes a dense table's gradient
//
// Attributes: table (the table's name) on all four; width on the sparse
// ones. PsPullSparse also says how the table's rows start and are admitted
// (what the training step's tables are created with: init zeros, uniform
// or normal, init_scale, init_seed, admit_after; TableInitializer). `round` (an int64 scalar, the worker's step) matters for tables
// trained synchronously: a push names its round, a pull of round r waits
// until rounds 0 .. r-1 are applied; absent, it is 0. None of them is
// kCollective (the ranks do not meet in them): they have side effects and
// state, so no pass folds, merges or drops them. Without a parameter client
// in the context they fail naming the node and the table.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_parameter_server_schemas(OpRegistry& registry);
void register_parameter_server_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
