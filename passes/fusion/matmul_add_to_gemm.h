// MatMulAddToGemm — MatMul(A, B) + C with 2-D A and B, where the product
// has no other reader and C broadcasts to it, becomes one Gemm(A, B, C): the
// bias is added while the product is still in cache instead of in a second
// pass over it.
//
//   weir::MatMulAddToGemm fuse;
//   fuse.run(graph, ctx);
#pragma once

#include "passes/pass.h"

namespace weir {

class MatMulAddToGemm final : public Pass {
 public:
  std::string name() const override { return "matmul_add_to_gemm"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
