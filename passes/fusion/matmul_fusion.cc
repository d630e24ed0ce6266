#include "passes/fusion/matmul_fusion.h"

#include "passes/fusion/activation_match.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

// A MatMul [..., M, K] x [K, N] of a float type, or a FusedMatMul that has
// no activation yet, whose output `y` has `readers` readers (the matched pattern).
bool fusable_product(const Node* node, const Value* y, const Graph& graph, size_t readers = 1) {
  if (node == nullptr || !node->domain().empty() || !node->control_outputs().empty() || y->uses().size() != readers ||
      is_graph_output(graph, y)) {
    return false;
  }
  DType dtype = y->dtype();
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kFloat16 && dtype != DType::kBFloat16) return false;
  if (node->op_type() == "FusedMatMul") return FusedActivation::from_node(*node).none();
  if (node->op_type() != "MatMul" || node->num_inputs() != 2) return false;
  const Shape& a = node->input(0)->type().shape;
  const Shape& b = node->input(1)->type().shape;
  return a.has_rank() && a.rank() >= 2 && b.has_rank() && b.rank() == 2;
}

Node* make_fused(Rewriter& rw, Node& product, std::vector<Value*> inputs, const FusedActivation& activation,
                 const Node& root) {
  std::map<std::string, Attribute> attributes;
  activation.to_attributes(attributes);
  Node* fused = rw.create(product, "FusedMatMul", inputs, 1, attributes, rw.graph().unique_name(product.name() + "_fused"));
  fused->output(0)->set_type(root.output(0)->type());
  return fused;
}

// Add(MatMul(A, B), c) with c a constant [N] (or [1, ..., 1, N]) -> FusedMatMul(A, B, c).
class MatMulBiasRule final : public RewriteRule {
 public:
  std::string name() const override { return "matmul_bias"; }
  std::vector<std::string> root_ops() const override { return {"Add"}; }
  bool apply(Node& add, Rewriter& rw) override {
    if (add.num_inputs() != 2 || rw.context().registry().find("FusedMatMul") == nullptr) return false;
    for (int side = 0; side < 2; ++side) {
      Value* y = add.input(static_cast<size_t>(side));
      Value* c = add.input(static_cast<size_t>(1 - side));
      Node* product = y->producer();
      if (!fusable_product(product, y, rw.graph()) || !c->is_constant() || c->dtype() != y->dtype()) continue;
      if (product->op_type() == "FusedMatMul" && product->num_inputs() > 2 && product->input(2) != nullptr) continue;
      const Shape& ys = y->type().shape;
      const Tensor& bias = c->data();
      int64_t n = ys.has_rank() && ys.dims().back().is_static() ? ys.dims().back().size() : -1;
      if (n < 0 || bias.num_elements() != n || bias.rank() > ys.rank() || !(add.output(0)->type().shape == ys)) continue;
      Value* flat = c;
      if (bias.rank() != 1) {
        flat = rw.graph().add_constant(rw.graph().unique_name(c->name() + "_bias"), bias.reshape({n}));
      }
      Node* fused = make_fused(rw, *product, {product->input(0), product->input(1), flat}, FusedActivation{}, add);
      rw.replace(add, fused->output(0));
      return true;
    }
    return false;
  }
};

// activation(MatMul or FusedMatMul) -> FusedMatMul with the activation.
class MatMulActivationRule final : public RewriteRule {
 public:
  std::string name() const override { return "matmul_activation"; }
  std::vector<std::string> root_ops() const override { return fusable_activation_ops(); }
  bool apply(Node& root, Rewriter& rw) override {
    if (rw.context().registry().find("FusedMatMul") == nullptr) return false;
    Value* y = nullptr;
    std::optional<FusedActivation> act = activation_of(root, rw, y);
    if (!act) return false;
    Node* product = y->producer();
    size_t readers = act->kind == FusedActivation::Kind::kSilu ? 2 : 1;  // SiLU: the Sigmoid and the Mul
    if (!fusable_product(product, y, rw.graph(), readers) || product->device() != root.device()) return false;
    std::vector<Value*> inputs = product->inputs();
    Node* fused = make_fused(rw, *product, inputs, *act, root);
    rw.replace(root, fused->output(0));
    return true;
  }
};

}  // namespace

MatMulFusion::MatMulFusion() : RewriteDriver("matmul_fusion", make_rules<MatMulBiasRule, MatMulActivationRule>()) {}

}  // namespace weir
