// Graph-wide dtype/shape inference from op schemas.
//
//   weir::infer_graph_types(graph, registry);   // fills every node output's type
//   weir::types_compatible(declared, inferred); // the check the verifier applies
#pragma once

#include "core/graph.h"
#include "core/op_schema.h"

namespace weir {

// Sets every node output's type from its schema's inference, in topological
// order. Where inference leaves a type unknown, the declared type is kept.
// Throws weir::Error naming the node when inputs contradict a schema.
void infer_graph_types(Graph& graph, const OpRegistry& registry);

// The same for one node whose inputs already have their types (a node a
// pass just added).
void infer_node_types(Node& node, const OpRegistry& registry);

// True when `declared` does not contradict `inferred`: equal dtypes (or one
// undefined), equal ranks (or one unknown) and equal sizes where both dims
// are static. Symbolic and static dims never contradict each other.
bool types_compatible(const TensorType& declared, const TensorType& inferred);

}  // namespace weir
