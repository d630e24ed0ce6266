#include "passes/graph_match.h"

#include <algorithm>

namespace weir {

bool is_graph_output(const Graph& graph, const Value* value) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), value) != graph.outputs().end();
}

Node* only_reader(const Value* value, const char* op_type) {
  if (value == nullptr || value->uses().size() != 1) return nullptr;
  Node* reader = value->uses().front().node;
  return reader->op_type() == op_type && reader->domain().empty() ? reader : nullptr;
}

Value* other_input(const Node& node, const Value* value) {
  if (node.num_inputs() != 2) return nullptr;
  return node.input(0) == value ? node.input(1) : (node.input(1) == value ? node.input(0) : nullptr);
}

bool scalar_value(const Value* value, double& result) {
  if (value == nullptr || !value->is_constant() || value->data().num_elements() != 1) return false;
  const Tensor& t = value->data();
  if (t.dtype() == DType::kFloat32) {
    result = t.data<float>()[0];
    return true;
  }
  if (t.dtype() == DType::kFloat64) {
    result = t.data<double>()[0];
    return true;
  }
  return false;
}

std::vector<int64_t> transpose_perm(const Node& transpose) {
  if (transpose.has_attr("perm")) return transpose.attr("perm").ints();
  const Value* input = transpose.num_inputs() > 0 ? transpose.input(0) : nullptr;
  if (input == nullptr || !input->shape().has_rank()) return {};
  const auto rank = static_cast<size_t>(input->shape().rank());
  std::vector<int64_t> reversed(rank);
  for (size_t i = 0; i < rank; ++i) reversed[i] = static_cast<int64_t>(rank - 1 - i);
  return reversed;
}

std::unordered_set<const Node*> nodes_feeding(const Value* value) { return nodes_feeding({value}, false); }

std::unordered_set<const Node*> nodes_feeding(const std::vector<const Value*>& values, bool through_control) {
  std::unordered_set<const Node*> nodes;
  std::vector<const Node*> stack;
  for (const Value* value : values) {
    if (value->producer() != nullptr) stack.push_back(value->producer());
  }
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    if (!nodes.insert(node).second) continue;
    for (const Value* input : node->inputs()) {
      if (input != nullptr && input->producer() != nullptr) stack.push_back(input->producer());
    }
    if (through_control) {
      for (const Node* control : node->control_inputs()) stack.push_back(control);
    }
  }
  return nodes;
}

}  // namespace weir
