// The one place every op family's schemas are registered.
//
//   const weir::OpRegistry& registry = weir::default_op_registry();
//   const weir::OpSchema* add = registry.find("Add");
//
//   weir::OpRegistry custom;            // or build a registry of your own
//   weir::register_all_ops(custom);
//   custom.add(my_schema);
#pragma once

#include "core/op_schema.h"

namespace weir {

// Calls each family's register_*_schemas(); a new family adds one line here.
void register_all_ops(OpRegistry& registry);

// A registry with every built-in op, built on first use and immutable after.
const OpRegistry& default_op_registry();

}  // namespace weir
