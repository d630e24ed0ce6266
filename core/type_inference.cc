#include "core/type_inference.h"

namespace weir {

bool types_compatible(const TensorType& declared, const TensorType& inferred) {
  // A tensor and a sequence never stand for each other; an optional
  // declaration accepts a present value, and an absent one only where declared.
  const bool declared_unknown = declared.dtype == DType::kUndefined && !declared.shape.has_rank() && declared.is_tensor();
  if (declared_unknown) return true;
  if (declared.sequence != inferred.sequence) return false;
  if (inferred.optional && !declared.optional) return false;
  if (declared.dtype != DType::kUndefined && inferred.dtype != DType::kUndefined &&
      declared.dtype != inferred.dtype) {
    return false;
  }
  if (!declared.shape.has_rank() || !inferred.shape.has_rank()) return true;
  if (declared.shape.rank() != inferred.shape.rank()) return false;
  for (size_t axis = 0; axis < declared.shape.dims().size(); ++axis) {
    const Dim& a = declared.shape[axis];
    const Dim& b = inferred.shape[axis];
    if (a.is_static() && b.is_static() && a.size() != b.size()) return false;
  }
  return true;
}

void infer_node_types(Node& node, const OpRegistry& registry) {
  const OpSchema& schema = registry.get(node.op_type(), node.domain());
  std::vector<TensorType> inferred = infer_output_types(node, schema);
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    Value* output = node.output(i);
    if (output == nullptr) continue;
    TensorType merged = inferred[i];
    if (merged.dtype == DType::kUndefined) merged.dtype = output->dtype();
    if (!merged.shape.has_rank()) merged.shape = output->shape();
    output->set_type(std::move(merged));
  }
}

void infer_graph_types(Graph& graph, const OpRegistry& registry) {
  for (Node* node : graph.topological_order()) infer_node_types(*node, registry);
}

}  // namespace weir
