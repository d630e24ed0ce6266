// ONNX's sequence ops (opset 11-17): schemas with type inference and CPU
// kernels. A sequence travels in one Tensor handle (Tensor::sequence); its
// type is the elements' dtype and shape with TensorType::sequence set.
//
//   SequenceConstruct(inputs...)              -> a sequence of copies of the inputs
//   SequenceEmpty()                           -> an empty sequence of `dtype` (ONNX code, default f32)
//   SequenceInsert(seq, tensor, position?)    -> seq with tensor before `position` (default: at the end)
//   SequenceErase(seq, position?)             -> seq without element `position` (default: the last)
//   SequenceAt(seq, position)                 -> a copy of element `position`
//   SequenceLength(seq)                       -> i64 scalar
//   SplitToSequence(input, split?)            -> input cut along `axis`: chunks of `split` (scalar,
//                                                the last may be shorter), of lengths `split` (1-D),
//                                                or of 1 (absent; keepdims=0 then drops the axis)
//   ConcatFromSequence(seq)                   -> elements joined along `axis`, or stacked along a
//                                                new axis `axis` (new_axis=1)
//   SequenceMap(seq, additional..., captured...) -> body run once per element (see below)
//
// Positions are i32 or i64 holding one element; negative ones count from the
// end: insert takes [-n, n], erase and at [-n, n-1].
//
// SequenceMap follows Weir's control-flow convention (ops/control/
// control_flow.h): the outer-scope values the body reads are explicit
// trailing inputs, `num_captured` (default 0) of them, and the body takes
// them as its last inputs. Iteration i gives the body element i of every
// sequence input and each tensor input whole; each body output is
// collected into one output sequence. Sequence inputs must have one length.
//
// Memory: the elements of a sequence own their memory (tensors put into
// one are cloned; a tensor taken out is copied into the kernel's output),
// and sequences are never changed in place.
//
// Not done: gradients (sequences carry no gradient in Weir).
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_sequence_schemas(OpRegistry& registry);
void register_sequence_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
