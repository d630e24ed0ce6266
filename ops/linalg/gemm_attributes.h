// Gemm's attributes, and the product's sizes they give to A and B: one
// reading for every device's Gemm kernel.
//
//   GemmAttributes gemm(node);                            // in the kernel's constructor
//   GemmSizes s = gemm.sizes(ctx, ctx.input(0), ctx.input(1));   // Y is [s.m, s.n]
#pragma once

#include <cstdint>
#include <string>

#include "core/graph.h"
#include "ops/kernel.h"
#include "ops/node_attributes.h"

namespace weir {

struct GemmSizes {
  int64_t m = 0, k = 0, n = 0;  // op(A) is [m, k], op(B) [k, n]
};

struct GemmAttributes {
  explicit GemmAttributes(const Node& node)
      : alpha(float_attr(node, "alpha", 1.0)), beta(float_attr(node, "beta", 1.0)),
        transpose_a(node.has_attr("transA") && node.attr("transA").i() != 0),
        transpose_b(node.has_attr("transB") && node.attr("transB").i() != 0) {}

  // Fails naming the node unless A and B are 2-D, of one dtype, with equal
  // inner sizes.
  GemmSizes sizes(KernelContext& ctx, const Tensor& a, const Tensor& b) const {
    if (a.rank() != 2 || b.rank() != 2 || a.dtype() != b.dtype()) {
      ctx.fail("needs 2-D A and B of one dtype, got " + a.type_string() + " and " + b.type_string());
    }
    GemmSizes s{.m = a.sizes()[transpose_a ? 1 : 0], .k = a.sizes()[transpose_a ? 0 : 1], .n = b.sizes()[transpose_b ? 0 : 1]};
    const int64_t k_b = b.sizes()[transpose_b ? 1 : 0];
    if (k_b != s.k) {
      ctx.fail("inner dimensions differ: op(A) is [" + std::to_string(s.m) + "," + std::to_string(s.k) +
               "], op(B) is [" + std::to_string(k_b) + "," + std::to_string(s.n) + "]");
    }
    return s;
  }

  double alpha, beta;
  bool transpose_a, transpose_b;
};

}  // namespace weir
