#include "passes/simplify/shape_op_folding.h"

#include "ops/tensor/shape_slice.h"

namespace weir {

bool ShapeOpFolding::run(Graph& graph, PassContext&) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    const bool is_shape = node->op_type() == "Shape", is_size = node->op_type() == "Size";
    if ((!is_shape && !is_size) || !node->domain().empty() || node->num_inputs() != 1) continue;
    const Value* input = node->input(0);
    Value* output = node->output(0);
    if (input == nullptr || output == nullptr || !input->shape().has_rank() || !input->shape().is_static()) continue;
    const std::vector<int64_t> sizes = input->shape().sizes();
    Tensor value;
    if (is_shape) {
      auto [start, end] = shape_slice(*node, static_cast<int64_t>(sizes.size()));
      value = Tensor::from_vector<int64_t>(std::vector<int64_t>(sizes.begin() + start, sizes.begin() + end), {end - start});
    } else {
      int64_t count = 1;
      for (int64_t s : sizes) count *= s;
      value = Tensor::scalar<int64_t>(count);
    }
    Value* constant = graph.add_constant(graph.unique_name(output->name() + "_static"), value);
    graph.replace_all_uses(output, constant);
    graph.remove_node(node);
    changed = true;
  }
  return changed;
}

}  // namespace weir
