#include "passes/fusion/matmul_add_to_gemm.h"

#include <unordered_set>

#include "passes/graph_match.h"

namespace weir {

bool MatMulAddToGemm::run(Graph& graph, PassContext&) {
  bool changed = false;
  // Nodes this run removed: the snapshot below may still list them (a node
  // an earlier pass added sits after its readers in insertion order).
  std::unordered_set<const Node*> removed;
  for (Node* add : graph.nodes()) {
    if (removed.count(add)) continue;
    if (add->op_type() != "Add" || !add->domain().empty() || add->num_inputs() != 2) continue;
    for (size_t side = 0; side < 2; ++side) {
      Value* product = add->input(side);
      Value* c = add->input(1 - side);
      Node* matmul = product != nullptr ? product->producer() : nullptr;
      if (matmul == nullptr || matmul->op_type() != "MatMul" || !matmul->domain().empty()) continue;
      if (product->uses().size() != 1 || matmul->device() != add->device()) continue;
      if (is_graph_output(graph, product)) continue;
      const Shape& a = matmul->input(0)->shape();
      const Shape& b = matmul->input(1)->shape();
      const Shape& out = add->output(0)->shape();
      // Gemm is 2-D; C must broadcast to the product's shape (the Add's
      // output must be the product's shape, not larger).
      if (!a.has_rank() || !b.has_rank() || a.rank() != 2 || b.rank() != 2) continue;
      if (!out.has_rank() || out != product->shape() || !c->shape().has_rank() || c->shape().rank() > 2) continue;
      if (c->dtype() != product->dtype()) continue;
      Node* gemm = graph.add_node("Gemm", {matmul->input(0), matmul->input(1), c}, 1, {},
                                  graph.unique_name(matmul->name() + "_gemm"));
      if (matmul->device()) gemm->set_device(*matmul->device());
      gemm->set_stream(matmul->stream());  // runs where the node it replaces ran
      gemm->output(0)->set_type(add->output(0)->type());
      graph.replace_all_uses(add->output(0), gemm->output(0));
      removed.insert(add);
      graph.remove_node(add);
      removed.insert(matmul);
      graph.remove_node(matmul);
      changed = true;
      break;
    }
  }
  return changed;
}

}  // namespace weir
