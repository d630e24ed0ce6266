// MaxUnpool (ONNX opset 11): schema, gradient rule and CPU kernel.
//
// MaxUnpool(X, I, output_shape?) undoes a MaxPool: X [N, C, spatial...] and
// its MaxPool indices I (flat positions in the whole unpooled tensor, as
// MaxPool's Indices output gives them) write X[i] at position I[i] of zeros
// of the unpooled shape, spatial size (in - 1) * stride - pad_begin -
// pad_end + kernel. With output_shape (each spatial size at least that) the
// indices still address the unpooled shape, and the result sits at the
// start of every axis of the larger output, zeros after it (as ONNX's node
// tests expect). Where two indices coincide the later element wins.
//
// Gradient: MaxUnpoolGrad(dY, X, I, output_shape?) reads dY at each X
// element's position (0 for an element a later one overwrote).
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_max_unpool_schemas(OpRegistry& registry);
void register_max_unpool_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
