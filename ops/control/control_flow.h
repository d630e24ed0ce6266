// If, Loop and Scan (ONNX opset 16 semantics; Scan's opset-8 batch form
// too): schemas with type inference from the sub-graphs, and CPU kernels
// that create their sub-graphs' kernels once, when the node's kernel is
// created, and run them per branch or iteration (ops/subgraph_runner.h).
//
// Inputs keep ONNX's order; the outer-scope values a sub-graph reads (ONNX
// lets a body name them directly) are explicit extra inputs appended after
// ONNX's own, and the sub-graphs take them as their last inputs, in the same
// order:
//
//   If(cond, captured...)                  then_branch, else_branch: graphs of inputs (captured...)
//   Loop(M?, cond?, v_initial..., captured...)  body: (iteration_num, cond, v..., captured...)
//                                               -> (cond, v..., scan_outputs...)
//   Scan(states..., scan_inputs..., captured...) body: (states..., scan_elements..., captured...)
//                                               -> (states..., scan_output_elements...)
//
// Loop and Scan say how many trailing inputs are captured in the Weir
// attribute `num_captured` (default 0). Scan with the Weir attribute
// `batched` = 1 is ONNX's opset-8 Scan: every state, scan input and output
// has a leading batch axis, each batch entry is scanned along axis 1
// (scan_input_axes and scan_output_axes must be absent), and when the node
// has one more input than the body, input 0 is `sequence_lens` (int64 [B]):
// entry b runs sequence_lens[b] iterations and its scan outputs are zero
// past them.
//
// Loop's termination is ONNX's table: M and cond both absent loops until the
// body fails; cond absent ignores the body's condition (it is still carried
// into the next iteration's cond input); M absent runs while the condition
// holds. Scan outputs are concatenated along a new leading axis (Loop) or
// along scan_output_axes (Scan), and must have one shape in every iteration.
//
// Sequence and optional values (core/tensor.h) pass as any value: If's
// outputs, loop-carried values and captured values may be ones; scan
// inputs and outputs are tensors.
//
// Not done: gradients; a Loop with neither loop-carried nor captured values (Weir's variadic
// inputs take at least one value).
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_control_flow_schemas(OpRegistry& registry);
void register_control_flow_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
