// IdentityElimination — Identity nodes, and Dropout nodes that are not in
// training mode, pass their input through: readers read the input instead.
// An Identity that names a graph output stays (the output keeps its name).
//
//   weir::IdentityElimination identities;
//   identities.run(graph, ctx);
#pragma once

#include "passes/pass.h"

namespace weir {

class IdentityElimination final : public Pass {
 public:
  std::string name() const override { return "identity_elimination"; }
  bool run(Graph& graph, PassContext& context) override;
};

}  // namespace weir
