// Small graph queries the rewrite passes share when matching patterns.
//
//   if (is_graph_output(graph, v)) continue;          // its name is part of the interface
//   Node* add = only_reader(v, "Add");                // v's single reader, if it is an Add
//   Value* rhs = other_input(*add, v);                // the Add's operand that is not v
//   double c;  if (scalar_value(rhs, c) && c == 1.0)  // a one-element f32/f64 constant
#pragma once

#include <unordered_set>
#include <vector>

#include "core/graph.h"

namespace weir {

bool is_graph_output(const Graph& graph, const Value* value);

// The only node reading `value`, when there is exactly one and it is a
// built-in `op_type` node; else nullptr.
Node* only_reader(const Value* value, const char* op_type);

// For a two-input node: the input that is not `value`; nullptr when `value`
// is not one of its inputs.
Value* other_input(const Node& node, const Value* value);

// The value of a one-element f32 or f64 constant.
bool scalar_value(const Value* value, double& result);

// A Transpose node's permutation: its perm attribute, else ONNX's default
// (the axes reversed) for an input of known rank; empty when neither is known.
std::vector<int64_t> transpose_perm(const Node& transpose);

// The nodes `value` depends on through data edges, its producer included
// (a loss's forward graph, for autodiff and recompute).
std::unordered_set<const Node*> nodes_feeding(const Value* value);
// The nodes any of `values` depends on, through data edges and with
// `through_control` also control edges (what a data-parallel replica runs).
std::unordered_set<const Node*> nodes_feeding(const std::vector<const Value*>& values, bool through_control);

}  // namespace weir
