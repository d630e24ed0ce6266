// The graph verifier: checks the IR invariants every pass must keep.
//
//   weir::verify_graph(graph, registry);   // throws weir::Error naming the node
//
// It checks that
//   - every node's op type has a schema (unless allow_unknown_ops), with
//     input/output counts, attribute names and types, and input dtypes the
//     schema allows; absent inputs only where the schema says optional;
//   - every input is defined: a graph input, constant, persistent value, or
//     an output of a node of this graph; graph outputs likewise;
//   - every value has exactly one producer, and node outputs are
//     intermediate values;
//   - declared output types agree with the schema's inference;
//   - constants' tensors match their declared types;
//   - the graph is acyclic over data and control edges;
//   - sub-graph attributes satisfy all of the above, recursively.
// It changes nothing and does not check numerical correctness (that is the
// `verify` tool's job, which runs the graph before and after a pass).
#pragma once

#include "core/graph.h"
#include "core/op_schema.h"
#include "core/type_inference.h"

namespace weir {

struct VerifyOptions {
  bool allow_unknown_ops = false;  // skip schema checks of unregistered ops (plugins not loaded)
  bool require_types = false;      // every value must have a known dtype and rank
};

void verify_graph(const Graph& graph, const OpRegistry& registry, const VerifyOptions& options = {});

}  // namespace weir
