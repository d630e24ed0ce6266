#include "ops/cuda/fused_elementwise_device.h"

#include "ops/cuda/elementwise_dispatch.cuh"
#include "ops/cuda/scalar_functions.cuh"

namespace weir::cuda {

namespace {

// One step, with the scalar functions of the ops' own kernels (as the CPU's
// FusedElementwise uses scalar_ops.h).
template <typename C>
__device__ inline C run_step(FusedCode op, C a, C b) {
  switch (op) {
    case FusedCode::kNeg: return neg_of(a);
    case FusedCode::kAbs: return abs_of(a);
    case FusedCode::kExp: return Math<C>::exp(a);
    case FusedCode::kLog: return Math<C>::log(a);
    case FusedCode::kSqrt: return Math<C>::sqrt(a);
    case FusedCode::kReciprocal: return C(1) / a;
    case FusedCode::kRelu: return relu_of(a);
    case FusedCode::kSigmoid: return sigmoid_of(a);
    case FusedCode::kTanh: return Math<C>::tanh(a);
    case FusedCode::kErf: return Math<C>::erf(a);
    case FusedCode::kFloor: return Math<C>::floor(a);
    case FusedCode::kCeil: return Math<C>::ceil(a);
    case FusedCode::kAdd: return add_rn(a, b);
    case FusedCode::kSub: return sub_rn(a, b);
    case FusedCode::kMul: return mul_rn(a, b);
    case FusedCode::kDiv: return a / b;
    case FusedCode::kMax: return max_of(a, b);
    case FusedCode::kMin: return min_of(a, b);
  }
  return a;
}

__device__ inline bool is_binary(FusedCode op) { return op >= FusedCode::kAdd; }

// Register r at output element i: an input's element (its only one if it is
// a scalar) or an earlier step's result.
template <typename C>
__device__ inline C read_register(const FusedProgram& program, const C* results, int r, int64_t i) {
  if (r < program.inputs) return static_cast<const C*>(program.data[r])[program.scalar[r] ? 0 : i];
  return results[r - program.inputs];
}

template <typename C>
__global__ void fused_elementwise_kernel(const __grid_constant__ FusedProgram program, C* out, int64_t count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    C results[FusedProgram::kMaxSteps];  // step s's result; each step reads only earlier ones
    for (int s = 0; s < program.steps; ++s) {
      const FusedCode op = program.op[s];
      const C a = read_register(program, results, program.a[s], i);
      const C b = is_binary(op) ? read_register(program, results, program.b[s], i) : C(0);
      results[s] = run_step(op, a, b);
    }
    out[i] = results[program.steps - 1];
  }
}

}  // namespace

void launch_fused_elementwise(FusedType type, const FusedProgram& program, void* out, int64_t count,
                              cudaStream_t stream) {
  if (type == FusedType::kFloat64) {
    fused_elementwise_kernel<double><<<blocks_for(count), kThreads, 0, stream>>>(program, static_cast<double*>(out), count);
  } else {
    fused_elementwise_kernel<float><<<blocks_for(count), kThreads, 0, stream>>>(program, static_cast<float*>(out), count);
  }
}

}  // namespace weir::cuda
