// FreezeParameters — for inference: persistent values that nothing writes
// become constants holding their initial tensors (same names), so constant
// folding and the fusion passes can use them. A persistent value read by a
// node with side effects or state (an optimizer update, Assign) is left
// alone, so a training graph keeps its parameters. After freezing,
// Session::set_state no longer applies to those values.
//
//   weir::FreezeParameters freeze;
//   freeze.run(graph, ctx);
#pragma once

#include "passes/pass.h"

namespace weir {

class FreezeParameters final : public Pass {
 public:
  std::string name() const override { return "freeze_parameters"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
