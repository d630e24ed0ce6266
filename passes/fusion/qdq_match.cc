#include "passes/fusion/qdq_match.h"

#include <vector>

namespace weir {

bool has_constant_data(const Value* v) { return v != nullptr && v->is_constant() && v->data().defined(); }

std::optional<Dequantized> dequantized(const Rewriter& rw, const Value* value) {
  Node* dq = rw.producer_of(value, "DequantizeLinear");
  if (dq == nullptr || dq->num_inputs() < 2 || dq->num_outputs() != 1) return std::nullopt;
  Dequantized d{dq->input(0), dq->input(1), dq->num_inputs() > 2 ? dq->input(2) : nullptr, 1};
  if (dq->has_attr("axis")) d.axis = dq->attr("axis").i();
  if (d.q == nullptr || !has_constant_data(d.scale) || d.scale->data().dtype() != DType::kFloat32) return std::nullopt;
  if (d.zero != nullptr && (!has_constant_data(d.zero) || d.zero->data().sizes() != d.scale->data().sizes())) return std::nullopt;
  return d;
}

bool per_tensor(const Dequantized& d) {
  return d.scale->data().num_elements() == 1 && (d.zero == nullptr || d.zero->data().num_elements() == 1);
}

bool same_value(const Value* a, const Value* b, DType zero_dtype) {
  if (a == b) return true;
  auto bytes_of = [&](const Value* v) {
    Tensor t = v != nullptr ? v->data() : Tensor(zero_dtype, {});
    return std::vector<unsigned char>(static_cast<const unsigned char*>(t.raw_data()),
                                      static_cast<const unsigned char*>(t.raw_data()) + t.nbytes());
  };
  if ((a != nullptr && !has_constant_data(a)) || (b != nullptr && !has_constant_data(b))) return false;
  if (a != nullptr && b != nullptr && a->data().dtype() != b->data().dtype()) return false;
  return bytes_of(a) == bytes_of(b);
}

Value* zero_constant(Graph& graph, DType dtype, const std::vector<int64_t>& sizes, const std::string& name) {
  return graph.add_constant(graph.unique_name(name), Tensor(dtype, sizes));
}

}  // namespace weir
