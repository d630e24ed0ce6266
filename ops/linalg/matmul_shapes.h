// MatMul's shapes with NumPy's rules: 1-D operands promoted to matrices,
// the inner sizes checked, the batch axes broadcast; and FusedMatMul's. One
// reading for every device's MatMul and FusedMatMul kernels.
//
//   MatmulShapes s = matmul_shapes(ctx, ctx.input(0), ctx.input(1));
//   Tensor& out = ctx.allocate_output(0, dtype, s.out_sizes);   // s.m x s.k times s.k x s.n per batch item
//   FusedMatmulShapes f = fused_matmul_shapes(ctx, a, b, bias);  // nullptr: no bias
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/elementwise/broadcast.h"
#include "ops/kernel.h"

namespace weir {

// The number of elements of `sizes` (1 for none).
inline int64_t sizes_product(const std::vector<int64_t>& sizes) {
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  return count;
}

struct MatmulShapes {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> a_batch{}, b_batch{}, out_batch{};  // the axes before the matrices
  std::vector<int64_t> out_sizes{};                        // the batch, then m and n unless promoted
};

// The shapes whatever the dtypes (MatMulInteger mixes u8 and i8). Fails
// naming the node for a scalar, unequal inner sizes or batch axes that do
// not broadcast.
inline MatmulShapes matmul_shapes_of_any_dtypes(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("inputs must have rank >= 1, got " + a.type_string() + " and " + b.type_string());
  // Promote 1-D operands to matrices, as NumPy does.
  std::vector<int64_t> as = a.sizes(), bs = b.sizes();
  const bool a_vector = as.size() == 1, b_vector = bs.size() == 1;
  if (a_vector) as.insert(as.begin(), 1);
  if (b_vector) bs.push_back(1);
  MatmulShapes s{.m = as[as.size() - 2], .k = as.back(), .n = bs.back()};
  if (bs[bs.size() - 2] != s.k) {
    ctx.fail("inner dimensions differ: " + a.type_string() + " x " + b.type_string() + " (" + std::to_string(s.k) +
             " vs " + std::to_string(bs[bs.size() - 2]) + ")");
  }
  s.a_batch.assign(as.begin(), as.end() - 2);
  s.b_batch.assign(bs.begin(), bs.end() - 2);
  auto out_batch = broadcast_sizes(s.a_batch, s.b_batch);
  if (!out_batch) ctx.fail("batch dimensions do not broadcast: " + a.type_string() + " x " + b.type_string());
  s.out_batch = *out_batch;
  s.out_sizes = s.out_batch;
  if (!a_vector) s.out_sizes.push_back(s.m);
  if (!b_vector) s.out_sizes.push_back(s.n);
  return s;
}

// The same for operands of one dtype; a dtype mismatch fails too.
inline MatmulShapes matmul_shapes(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) ctx.fail("inputs are " + a.type_string() + " and " + b.type_string());
  return matmul_shapes_of_any_dtypes(ctx, a, b);
}

// FusedMatMul's shapes: A [..., M, K] with its batch folded into the rows,
// B [K, N], an optional bias [N], all of one dtype; the output is A's shape
// with N last. Fails naming the node otherwise.
struct FusedMatmulShapes {
  int64_t m = 0, k = 0, n = 0;  // m: the product of A's sizes but the last
  std::vector<int64_t> out_sizes{};
};

inline FusedMatmulShapes fused_matmul_shapes(const KernelContext& ctx, const Tensor& a, const Tensor& b, const Tensor* bias) {
  if (a.rank() < 2 || b.rank() != 2 || a.dtype() != b.dtype() || (bias != nullptr && bias->dtype() != a.dtype())) {
    ctx.fail("needs A [..., M, K] and B [K, N] of one dtype, got " + a.type_string() + " and " + b.type_string());
  }
  FusedMatmulShapes s{.m = sizes_product(std::vector<int64_t>(a.sizes().begin(), a.sizes().end() - 1)),
                      .k = a.sizes().back(), .n = b.sizes()[1]};
  if (b.sizes()[0] != s.k) ctx.fail("inner dimensions differ: " + a.type_string() + " x " + b.type_string());
  if (bias != nullptr && (bias->rank() != 1 || bias->sizes()[0] != s.n)) {
    ctx.fail("bias " + bias->type_string() + " must be [" + std::to_string(s.n) + "]");
  }
  s.out_sizes = a.sizes();
  s.out_sizes.back() = s.n;
  return s;
}

}  // namespace weir
