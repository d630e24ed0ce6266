// A graph as Graphviz dot text: `graph-runner inspect --dot FILE` and
// weir.inspect(..., dot=FILE) in Python.
//
//   write_file_atomically("model.dot", weir::tools::graphviz(plan->graph(), op_set->ops));
//   // dot -Tsvg model.dot > model.svg
//
// Inputs and outputs are ellipses; each node is a box labelled with its op
// and name, each edge with the value's type; control edges are dashed. The
// nodes placed on a device are drawn inside a cluster per device ("cpu:0",
// "cuda:1"); nodes without a placement are outside every cluster. What
// moves data between ranks or devices is marked: collectives (AllReduce,
// Send, ... : ops with OpTrait::kCollective) and parameter-server ops
// (Ps*) as filled orange hexagons, DeviceCopy as a filled grey box, and
// the label says which stream a node runs on when it is not the default.
#pragma once

#include <string>

#include "core/graph.h"
#include "core/op_schema.h"

namespace weir::tools {

std::string graphviz(const Graph& graph, const OpRegistry& registry);

}  // namespace weir::tools
