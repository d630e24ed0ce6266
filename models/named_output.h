// A graph output under a stable name ("loss", "logits", "probability"),
// which files, feeds and fetches use: an Identity into a value of that name.
#pragma once

#include <string>

#include "frontend/builder/graph_builder.h"

namespace weir::models {

inline void add_named_output(GraphBuilder& b, Var value, const std::string& name) {
  if (!b.ok() || !value.valid()) return;
  Value* named = b.graph().add_value(name);
  b.graph().add_node_with_outputs("Identity", {value.value()}, {named}, {}, name + "_output");
  named->set_type(value.type());
  b.graph().add_output(named);
}

}  // namespace weir::models
