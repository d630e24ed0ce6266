// QLinearMatMul and MatMulInteger through oneDNN's int8 matmul: A u8 or s8
// ([rows, K], the batch axes of an N-D A folded into rows), B s8 [K, N] with
// zero point 0, s32 accumulation; then either the s32 sums (MatMulInteger)
// or one multiplier per tensor or per column (a_scale * b_scale[n] /
// y_scale), the output zero point, halves to even and saturation to u8 or
// s8 (QLinearMatMul), as the reference loops in integer_matmul.cc compute,
// but for exact ties with an odd zero point (see Int8ConvRun).
//
//   DnnlInt8Matmul matmul;
//   Int8MatmulSetup setup{DType::kUInt8, DType::kInt8, multipliers, /*a_zero_nonzero=*/true, true};
//   if (!matmul.run(rows, k, n, setup, {a, a_zero, b, y_zero, y}, /*constant_b=*/true)) { ... reference ... }
//
// y_dtype kInt32 means MatMulInteger: no multipliers, no output zero point.
// Primitives are cached per shape and setup; a constant B is packed once.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "ops/kernel.h"

namespace weir {

struct Int8MatmulSetup {
  DType a_dtype = DType::kUInt8;  // u8 or s8
  DType y_dtype = DType::kUInt8;  // u8, s8, or i32 (the raw sums)
  std::vector<float> multipliers;  // one, or one per column; empty for i32
  bool a_zero_nonzero = false;
  bool y_zero_nonzero = false;
};

struct Int8MatmulRun {
  const void* a = nullptr;
  int32_t a_zero = 0;
  const int8_t* b = nullptr;
  int32_t y_zero = 0;
  void* y = nullptr;
};

class DnnlInt8Matmul {
 public:
  DnnlInt8Matmul();
  ~DnnlInt8Matmul();
  DnnlInt8Matmul(const DnnlInt8Matmul&) = delete;
  DnnlInt8Matmul& operator=(const DnnlInt8Matmul&) = delete;

  // y[rows, n] = a[rows, k] b[k, n], requantized; false (nothing written)
  // when oneDNN has no optimized kernel for it.
  bool run(int64_t rows, int64_t k, int64_t n, const Int8MatmulSetup& setup, const Int8MatmulRun& run,
           bool constant_b);

  // The constant B matrices packed so far, for a plan file
  // (OpKernel::packed_constants), and packs from one to use instead of
  // packing where a primitive wants their layout.
  std::vector<PackedConstant> packed_weights() const;
  void adopt_packed_weights(std::vector<PackedConstant> packs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
