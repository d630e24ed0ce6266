// ConstantFolding — a node whose inputs are all constants is run once, now,
// and its outputs become constants. Ops that are stateful (random, reading
// or writing persistent values), have side effects, or communicate are
// never folded; nor are results over 64 MiB (a constant that size costs
// more to store than to compute).
//
//   weir::ConstantFolding folding;
//   folding.run(graph, ctx);   // kernels from ctx.kernels()
#pragma once

#include "passes/pass.h"

namespace weir {

class ConstantFolding final : public Pass {
 public:
  std::string name() const override { return "constant_folding"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
