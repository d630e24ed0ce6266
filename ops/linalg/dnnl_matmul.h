// Batched matrix products through oneDNN, with primitives cached by problem.
//
//   DnnlMatmul matmul;
//   // C[b] = alpha * op(A[b]) * op(B[b]) for b < batch; row-major, contiguous.
//   matmul.run({.dtype = DType::kFloat32, .batch = 1, .m = 64, .k = 128, .n = 32}, a, b, c);
//   matmul.run({..., .bias = true, .activation = gelu, .constant_b = true}, a, w, c, bias);  // FusedMatMul
//
// oneDNN builds a primitive (it picks and JIT-compiles a kernel for the
// shape and CPU) once per distinct problem; later runs reuse it. The cache is
// guarded so one instance may run from several threads. f32 and bf16 run
// natively (bf16 on AVX512-BF16 hardware); f16 inputs are widened to f32
// first, since this CPU has no f16 arithmetic.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "ops/elementwise/fused_activation.h"
#include "ops/kernel.h"

namespace weir {

struct MatmulProblem {
  DType dtype = DType::kFloat32;  // of A, B and C alike, unless c_dtype says otherwise
  // C's dtype when wider than A's and B's (f32 from bf16/f16: a weight
  // gradient summed over a batch, ops/wide_output.h; a FusedMatMul whose
  // result is read in f32); undefined: dtype. A bias stays in dtype.
  DType c_dtype = DType::kUndefined;
  int64_t batch = 1;
  int64_t m = 0, k = 0, n = 0;
  bool transpose_a = false;  // A stored as [k, m]
  bool transpose_b = false;  // B stored as [n, k]
  float alpha = 1.0f;
  // FusedMatMul: C = activation(alpha * op(A) op(B) + bias[n]), the bias and
  // the activation applied by the primitive (a bias argument and an eltwise
  // post-op).
  bool bias = false;
  FusedActivation activation{};
  // B never changes while the DnnlMatmul lives (a graph constant): it is
  // reordered once into the layout the primitive prefers, and kept.
  bool constant_b = false;

  DType output_dtype() const { return c_dtype == DType::kUndefined ? dtype : c_dtype; }

  auto key() const {
    return std::make_tuple(dtype, c_dtype, batch, m, k, n, transpose_a, transpose_b, alpha, bias,
                           static_cast<int>(activation.kind), activation.alpha, activation.beta, constant_b);
  }
};

class DnnlMatmul {
 public:
  DnnlMatmul();
  ~DnnlMatmul();
  DnnlMatmul(const DnnlMatmul&) = delete;
  DnnlMatmul& operator=(const DnnlMatmul&) = delete;

  // True for dtypes oneDNN computes here (f32, bf16, f16 via f32).
  static bool supports(DType dtype);
  // `bias` ([n], C's dtype) is read when problem.bias.
  void run(const MatmulProblem& problem, const void* a, const void* b, void* c, const void* bias = nullptr);

  // The constant B matrices (constant_b) packed so far, for a plan file
  // (OpKernel::packed_constants).
  std::vector<PackedConstant> packed_weights() const;
  // Packs from a plan file: a problem with constant_b whose primitive wants
  // one's layout uses it instead of packing B.
  void adopt_packed_weights(std::vector<PackedConstant> packs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
