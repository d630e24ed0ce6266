// Einsum (ONNX opset 12): schema, gradient rule and CPU kernels.
//
// Einsum(inputs...) evaluates `equation` in Einstein notation: one term of
// subscript letters per input ("ij,jk->ik"), an optional explicit output
// after "->" (else the letters that appear exactly once, in ASCII order,
// after the "..." axes), repeated letters within a term for diagonals,
// letters absent from the output summed, and "..." standing for the same
// number of leading, NumPy-broadcast axes in every term that has it (summed
// when an explicit output leaves it out). Spaces are ignored.
//
// Two-operand products whose letters are each batch, row, column or
// contracted (no diagonals, no broadcasting, no letter of one operand only
// that is summed) are permuted to [batch, m, k] x [batch, k, n] and run as a
// batched matrix product (oneDNN for f32, bf16, f16; a plain loop otherwise);
// everything else runs a general loop over the subscripts, accumulating in
// f64 (floats) or wrapping 64-bit integers.
//
// Gradient: EinsumGrad(dY, inputs..., operand=i), by the same general loop:
// dInput_i sums dY times the other inputs over every subscript assignment
// (diagonals and broadcast axes included). Floating-point inputs only.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_einsum_schemas(OpRegistry& registry);
void register_einsum_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
