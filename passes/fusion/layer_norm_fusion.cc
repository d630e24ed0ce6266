#include "passes/fusion/layer_norm_fusion.h"

#include <algorithm>

#include "passes/graph_match.h"

namespace weir {

namespace {

// A ReduceMean over the last axis only, keeping it; its input.
Value* last_axis_mean_of(const Node* node) {
  if (node == nullptr || node->op_type() != "ReduceMean" || !node->domain().empty() || node->num_inputs() != 1) return nullptr;
  Value* in = node->input(0);
  if (!in->shape().has_rank() || !node->has_attr("axes")) return nullptr;
  const std::vector<int64_t>& axes = node->attr("axes").ints();
  const int64_t rank = static_cast<int64_t>(in->shape().rank());
  if (axes.size() != 1 || (axes[0] != -1 && axes[0] != rank - 1)) return nullptr;
  if (node->has_attr("keepdims") && node->attr("keepdims").i() == 0) return nullptr;
  return in;
}

// A per-feature vector [C] for the last axis of size C.
bool feature_vector(const Value* v, int64_t features) {
  return v != nullptr && v->shape().has_rank() && v->shape().rank() == 1 && v->shape()[0].is_static() &&
         v->shape()[0].size() == features;
}

}  // namespace

namespace {

class LayerNormRule final : public RewriteRule {
 public:
  std::string name() const override { return "layer_norm"; }
  std::vector<std::string> root_ops() const override { return {"ReduceMean"}; }
  bool apply(Node& mean_node, Rewriter& rw) override;
};

// Rooted at the first ReduceMean (the mean): the pattern is matched
// downwards from it, and its last node is replaced.
bool LayerNormRule::apply(Node& mean_node, Rewriter& rw) {
  Graph& graph = rw.graph();
  Node* mean = &mean_node;
  {
    Value* x = last_axis_mean_of(mean);
    if (x == nullptr || !x->shape().is_static()) return false;
    const int64_t features = x->shape().sizes().back();
    // d = x - mean, read by the square and the division only.
    Node* sub = only_reader(mean->output(0), "Sub");
    if (sub == nullptr || sub->input(0) != x || sub->input(1) != mean->output(0)) return false;
    Value* d = sub->output(0);
    if (d->uses().size() != 2 && d->uses().size() != 3) return false;
    Node* square = nullptr;
    Node* div = nullptr;
    for (const Use& use : d->uses()) {
      Node* reader = use.node;
      double exponent = 0;
      if (reader->op_type() == "Pow" && reader->input(0) == d && scalar_value(reader->input(1), exponent) && exponent == 2.0) {
        square = reader;
      } else if (reader->op_type() == "Mul" && reader->input(0) == d && reader->input(1) == d) {
        square = reader;
      } else if (reader->op_type() == "Div" && reader->input(0) == d) {
        div = reader;
      }
    }
    const size_t expected_uses = square != nullptr && square->op_type() == "Mul" ? 3 : 2;
    if (square == nullptr || div == nullptr || d->uses().size() != expected_uses) return false;
    Node* variance = only_reader(square->output(0), "ReduceMean");
    if (variance == nullptr || last_axis_mean_of(variance) != square->output(0)) return false;
    Node* add_eps = only_reader(variance->output(0), "Add");
    double epsilon = 0;
    if (add_eps == nullptr || !scalar_value(other_input(*add_eps, variance->output(0)), epsilon) || epsilon < 0) return false;
    Node* root = only_reader(add_eps->output(0), "Sqrt");
    if (root == nullptr || div->input(1) != root->output(0) || root->output(0)->uses().size() != 1) return false;
    // Optional affine part: * gamma, then + beta.
    Value* result = div->output(0);
    Value* gamma = nullptr;
    Value* beta = nullptr;
    if (Node* mul = only_reader(result, "Mul")) {
      Value* g = other_input(*mul, result);
      if (feature_vector(g, features)) {
        gamma = g;
        result = mul->output(0);
      }
    }
    if (Node* add = only_reader(result, "Add")) {
      Value* b = other_input(*add, result);
      if (feature_vector(b, features)) {
        beta = b;
        result = add->output(0);
      }
    }
    if (gamma == nullptr) {
      Tensor ones(x->dtype(), {features});
      if (x->dtype() == DType::kFloat32) {
        std::fill_n(ones.data<float>(), features, 1.0f);
      } else if (x->dtype() == DType::kFloat64) {
        std::fill_n(ones.data<double>(), features, 1.0);
      } else {
        return false;
      }
      gamma = graph.add_constant(graph.unique_name(mean->name() + "_scale"), ones);
    }
    std::vector<Value*> inputs = {x, gamma};
    if (beta != nullptr) inputs.push_back(beta);
    Node* fused = rw.create(*mean, "LayerNormalization", inputs, 1,
                                 {{"axis", Attribute(int64_t{-1})}, {"epsilon", Attribute(epsilon)}},
                                 graph.unique_name(mean->name() + "_layer_norm"));
    fused->output(0)->set_type(result->type());
    rw.replace(*result->producer(), fused->output(0));  // the decomposed nodes go with it
  }
  return true;
}

}  // namespace

LayerNormFusion::LayerNormFusion() : RewriteDriver("layer_norm_fusion", make_rules<LayerNormRule>()) {}


}  // namespace weir
