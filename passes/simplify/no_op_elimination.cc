#include "passes/simplify/no_op_elimination.h"

#include "passes/graph_match.h"

namespace weir {

namespace {

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Widening from `narrow` to `wide` and back loses nothing.
bool lossless_round_trip(DType narrow, DType wide) {
  if (wide == DType::kFloat64) return narrow == DType::kFloat32 || narrow == DType::kFloat16 || narrow == DType::kBFloat16;
  if (wide == DType::kFloat32) return narrow == DType::kFloat16 || narrow == DType::kBFloat16;
  return false;
}

// The value `node`'s output equals, or nullptr.
Value* passthrough_of(const Node& node) {
  if (!node.domain().empty() || node.num_inputs() < 1 || node.num_outputs() != 1) return nullptr;
  Value* in = node.input(0);
  const Value* out = node.output(0);
  if (in == nullptr || out == nullptr || out->dtype() == DType::kUndefined) return nullptr;
  const std::string& op = node.op_type();
  const bool same_dtype = in->dtype() == out->dtype();
  const bool same_shape = in->shape().has_rank() && in->shape().is_static() && out->shape().has_rank() &&
                          out->shape() == in->shape();
  if (op == "Transpose" && in->shape().has_rank() && is_identity(transpose_perm(node))) return in;
  if (op == "Cast" && same_dtype) return in;
  if ((op == "Reshape" || op == "Expand" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten") && same_shape &&
      same_dtype) {
    return in;
  }
  // Pairs: the producer's input, when the two undo each other.
  const Node* first = in->producer();
  if (first == nullptr || first->op_type() != op || !first->domain().empty() || first->num_inputs() < 1) return nullptr;
  Value* origin = first->input(0);
  if (origin == nullptr || origin->dtype() != out->dtype()) return nullptr;
  if (op == "Transpose" && origin->shape().has_rank()) {
    const size_t rank = origin->shape().rank();
    std::vector<int64_t> p1 = transpose_perm(*first), p2 = transpose_perm(node);
    if (p1.size() != rank || p2.size() != rank) return nullptr;
    std::vector<int64_t> composed(rank);
    for (size_t i = 0; i < rank; ++i) composed[i] = p1[static_cast<size_t>(p2[i])];
    return is_identity(composed) ? origin : nullptr;
  }
  if (op == "Cast" && lossless_round_trip(origin->dtype(), in->dtype())) return origin;
  return nullptr;
}

}  // namespace

bool NoOpElimination::run(Graph& graph, PassContext&) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    Value* source = passthrough_of(*node);
    Value* out = node->num_outputs() == 1 ? node->output(0) : nullptr;
    if (source == nullptr || out == nullptr || out->uses().empty()) continue;
    // A graph output keeps its name (and its producer).
    if (is_graph_output(graph, out)) continue;
    graph.replace_all_uses(out, source);
    changed = true;
  }
  return changed;
}

}  // namespace weir
