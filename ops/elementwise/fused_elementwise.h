// FusedElementwise — a chain (or small tree) of elementwise ops evaluated in
// one pass over the data, made by the elementwise_fusion pass: each block of
// elements runs every step while it is in cache, instead of one full pass
// over memory per op.
//
//   FusedElementwise(x0, x1, ...) with program ["Add 0 1", "Relu 2", "Mul 3 1"]
//
// Registers 0..n-1 are the inputs; each instruction "Op a [b]" appends one
// register; the output is the last. Inputs have the output's shape or one
// element (broadcast). Ops: Neg Abs Exp Log Sqrt Reciprocal Relu Sigmoid
// Tanh Erf Floor Ceil (unary), Add Sub Mul Div Max Min (binary), with ONNX's
// semantics. f32 and f64.
#pragma once

#include <string>
#include <vector>

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

// The op types a program may use: what the fusion pass may fold in.
const std::vector<std::string>& fusable_elementwise_ops();
// How many inputs op `name` takes (1 or 2); 0 for one it does not know.
int fusable_elementwise_arity(const std::string& name);

// A parsed program: each step's op and the registers it reads (b only for
// binary ops). Other devices' kernels run the same programs.
enum class FusedStepOp { kNeg, kAbs, kExp, kLog, kSqrt, kReciprocal, kRelu, kSigmoid, kTanh, kErf, kFloor, kCeil,
                         kAdd, kSub, kMul, kDiv, kMax, kMin };
struct FusedStep {
  FusedStepOp op;
  int a = 0, b = 0;
};
// Parses and checks node's program over `inputs` input registers; throws
// naming the node.
std::vector<FusedStep> parse_fused_program(const Node& node, size_t inputs);
// The output sizes of a FusedElementwise kernel's inputs: the shape of those
// that are not one element (all must agree), else input 0's. Fails naming
// the node when the inputs' dtypes or shapes do not fit.
std::vector<int64_t> fused_elementwise_output_sizes(const KernelContext& ctx);

void register_fused_elementwise_schema(OpRegistry& registry);
void register_fused_elementwise_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
