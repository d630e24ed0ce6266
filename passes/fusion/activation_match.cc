#include "passes/fusion/activation_match.h"

#include <limits>

#include "passes/graph_match.h"

namespace weir {

std::vector<std::string> fusable_activation_ops() { return {"Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "Gelu", "Mul"}; }

using Kind = FusedActivation::Kind;

std::optional<FusedActivation> activation_of(const Node& root, Rewriter& rw, Value*& y) {
  const std::string& op = root.op_type();
  if (root.num_inputs() == 0 || root.input(0) == nullptr) return std::nullopt;
  y = root.input(0);
  FusedActivation act;
  if (op == "Relu") {
    act.kind = Kind::kRelu;
  } else if (op == "LeakyRelu") {
    act.kind = Kind::kLeakyRelu;
    act.alpha = root.has_attr("alpha") ? static_cast<float>(root.attr("alpha").f()) : 0.01f;
  } else if (op == "Clip") {
    act.kind = Kind::kClip;
    act.alpha = std::numeric_limits<float>::lowest();
    act.beta = std::numeric_limits<float>::max();
    double bound = 0;
    for (size_t i = 1; i < root.num_inputs(); ++i) {
      if (root.input(i) == nullptr) continue;
      if (!scalar_value(root.input(i), bound)) return std::nullopt;  // bounds computed at run time
      (i == 1 ? act.alpha : act.beta) = static_cast<float>(bound);
    }
    if (!(act.alpha <= act.beta)) return std::nullopt;
  } else if (op == "Sigmoid") {
    act.kind = Kind::kSigmoid;
  } else if (op == "Tanh") {
    act.kind = Kind::kTanh;
  } else if (op == "Gelu") {
    std::string approximate = root.has_attr("approximate") ? root.attr("approximate").s() : "none";
    if (approximate != "none" && approximate != "tanh") return std::nullopt;
    act.kind = approximate == "tanh" ? Kind::kGeluTanh : Kind::kGelu;
  } else if (op == "Mul") {
    // SiLU: Mul(y, Sigmoid(y)), in either order; the Sigmoid read by the Mul alone.
    for (int side = 0; side < 2; ++side) {
      Value* gate = root.input(static_cast<size_t>(side));
      Value* other = root.input(static_cast<size_t>(1 - side));
      Node* sigmoid = rw.producer_of(gate, "Sigmoid");
      if (sigmoid == nullptr || sigmoid->input(0) != other || gate->uses().size() != 1) continue;
      if (is_graph_output(rw.graph(), gate) || other->uses().size() != 2) continue;
      y = other;
      act.kind = Kind::kSilu;
      return act;
    }
    return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (y->uses().size() != 1) return std::nullopt;
  return act;
}

}  // namespace weir
