// Row-major matrix products through cuBLASLt, for the CUDA MatMul, Gemm and
// FusedMatMul kernels:
//
//   cuda::LtMatmul matmul;                             // an OpKernel member
//   // D[b] = epilogue(alpha * op(A[b]) op(B[b]) + bias) for b < batch
//   matmul.run(ctx, {.input = DType::kFloat16, .output = DType::kFloat16, .m = 64, .n = 32, .k = 128},
//              {.a = a, .b = b, .d = d});
//
// The computation is f32 throughout (CUBLAS_COMPUTE_32F: f16 and bf16
// inputs are multiplied and summed in f32, and f32 gets no TF32), so
// results agree with the CPU kernels to f32 rounding; D rounds once.
// cuBLASLt's heuristic picks an algorithm once per distinct problem (shape,
// types, epilogue, pointer alignments) and the choice is kept; the
// workspace it needs is a device buffer of this object per stream (not a
// local of one call: the device may still be using it when the call
// returns), replaced by a larger one when a problem needs more.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/kernel.h"

namespace weir::cuda {

// What cuBLASLt applies to the product before storing it. Its Relu is
// max(x, 0), exactly FusedActivation's Relu; the bias is a vector of n, one
// value per column of D, in the inputs' type, which must then also be D's.
// Its GELU epilogue is not used: on an H100 (CUDA 13) its bf16 GELU
// came 0.0008 off the CPU's GeluTanh at -0.0085, 13 bf16 ulps, where the
// tanh form nears 0 (see FusedMatMul's own epilogue kernel).
enum class LtEpilogue { kNone, kBias, kRelu, kReluBias };

struct LtProblem {
  DType input = DType::kFloat32;   // A's, B's (and the bias's): f32, f16 or bf16
  DType output = DType::kFloat32;  // D's: the input's, or f32 from f16 or bf16
  int64_t m = 0, n = 0, k = 0;     // op(A) is [m, k], op(B) [k, n], D [m, n]; all > 0
  bool transpose_a = false;        // A stored as [k, m]
  bool transpose_b = false;        // B stored as [n, k]
  float alpha = 1.0f;
  // Batch item i of an operand starts `stride` elements after item i - 1;
  // a stride of 0 gives every item the same matrix.
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  LtEpilogue epilogue = LtEpilogue::kNone;
};

struct LtOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;  // read by the bias epilogues
};

class LtMatmul {
 public:
  // Enqueues the product on the step's stream. Returns false, enqueuing
  // nothing, when cuBLASLt offers no algorithm for it (the caller may then
  // split the batch); fails naming the node and the call on a library error.
  bool try_run(const KernelContext& ctx, const LtProblem& problem, const LtOperands& operands);
  // The same, failing naming the node when cuBLASLt offers no algorithm.
  void run(const KernelContext& ctx, const LtProblem& problem, const LtOperands& operands);

 private:
  // The heuristic's choice for one problem; `found` false when it had none.
  struct Choice {
    bool found = false;
    cublasLtMatmulAlgo_t algo{};
    size_t workspace_bytes = 0;
  };
  using Key = std::tuple<DType, DType, int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, int64_t, int,
                         uint32_t, uint32_t, uint32_t, uint32_t>;

  std::mutex mutex_;  // guards the choices (held to look up or keep one, not to launch)
  std::map<Key, Choice> choices_;
};

}  // namespace weir::cuda
