// The device side of the CUDA FusedElementwise kernel
// (fused_elementwise_device.cu): one generic kernel that interprets the
// node's program for every output element, the program passed by value in
// the kernel's parameters. Plain arguments only (no Weir types).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace weir::cuda {

// The ops a program step may run: FusedStepOp of
// ops/elementwise/fused_elementwise.h, in the same order.
enum class FusedCode : uint8_t { kNeg, kAbs, kExp, kLog, kSqrt, kReciprocal, kRelu, kSigmoid, kTanh, kErf, kFloor,
                                 kCeil, kAdd, kSub, kMul, kDiv, kMax, kMin };

// Registers 0 .. inputs-1 are the inputs; step s writes register inputs + s;
// the output is the last step's. An input marked `scalar` has one element,
// read for every output element; the others have the output's shape.
struct FusedProgram {
  static constexpr int kMaxInputs = 16;
  static constexpr int kMaxSteps = 64;
  int inputs = 0;
  int steps = 0;
  const void* data[kMaxInputs] = {};
  bool scalar[kMaxInputs] = {};
  FusedCode op[kMaxSteps] = {};
  uint8_t a[kMaxSteps] = {};  // the registers each step reads (b for binary ops)
  uint8_t b[kMaxSteps] = {};
};

// The program in f32 or f64 (each computed in its own type, as on the CPU).
enum class FusedType { kFloat32, kFloat64 };

// out[i] = program(inputs at i) for i < count (count > 0).
void launch_fused_elementwise(FusedType type, const FusedProgram& program, void* out, int64_t count,
                              cudaStream_t stream);

}  // namespace weir::cuda
