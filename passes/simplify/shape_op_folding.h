// ShapeOpFolding — Shape and Size of a value whose shape is static are
// constants: they become int64 constants, so constant folding can finish
// the shape arithmetic that usually follows (Gather, Concat, Reshape
// targets in exported models).
//
//   weir::ShapeOpFolding shapes;
//   shapes.run(graph, ctx);   // before ConstantFolding
#pragma once

#include "passes/pass.h"

namespace weir {

class ShapeOpFolding final : public Pass {
 public:
  std::string name() const override { return "shape_op_folding"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
