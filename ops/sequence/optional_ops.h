// ONNX's optional ops (opset 15-18): schemas with type inference and CPU
// kernels. An optional value is its tensor or sequence when present, and
// Tensor::none(dtype, sequence) when absent; its type has
// TensorType::optional set.
//
//   Optional(input?)          -> input as an optional, or an empty optional of the `type` attribute
//   OptionalHasElement(input?) -> bool scalar: input is present (an absent input: false)
//   OptionalGetElement(input) -> the value of a present optional (a tensor is
//                                copied, a sequence passed on); a plain
//                                tensor or sequence is returned as it is
//
// Optional's `type` attribute is ONNX's TypeProto of the element, which the
// ONNX importer gives as ints: the dtype (ONNX TensorProto code), 1 for a
// sequence else 0, the rank (-1: unknown), then each dim (-1: not fixed).
//
// Not done: gradients; optionals of anything but a tensor or a sequence of
// tensors.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_optional_schemas(OpRegistry& registry);
void register_optional_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
