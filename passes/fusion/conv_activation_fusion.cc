#include "passes/fusion/conv_activation_fusion.h"

#include <limits>

#include "ops/elementwise/fused_activation.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

using Kind = FusedActivation::Kind;

// The activation `root` computes of its input `y`, or nullopt when it is not
// one FusedConv can apply. Sets `y` to the value the activation reads.
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

class ConvActivationRule final : public RewriteRule {
 public:
  std::string name() const override { return "conv_activation"; }
  std::vector<std::string> root_ops() const override {
    return {"Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "Gelu", "Mul"};
  }

  bool apply(Node& root, Rewriter& rw) override {
    if (rw.context().registry().find("FusedConv") == nullptr) return false;
    Value* y = nullptr;
    std::optional<FusedActivation> act = activation_of(root, rw, y);
    if (!act) return false;
    Node* conv = y->producer();
    if (conv == nullptr || !conv->domain().empty() || is_graph_output(rw.graph(), y)) return false;
    bool plain = conv->op_type() == "Conv";
    bool unfused = conv->op_type() == "FusedConv" && FusedActivation::from_node(*conv).none();
    if (!plain && !unfused) return false;
    if (conv->device() != root.device() || !conv->control_outputs().empty()) return false;
    std::map<std::string, Attribute> attributes = conv->attributes();
    act->to_attributes(attributes);
    Node* fused = rw.graph().add_node("FusedConv", conv->inputs(), 1, attributes,
                                      rw.graph().unique_name(conv->name() + "_" + FusedActivation::name(act->kind)));
    if (conv->device()) fused->set_device(*conv->device());
    fused->output(0)->set_type(root.output(0)->type());
    rw.replace(root, fused->output(0));
    return true;
  }
};

}  // namespace

ConvActivationFusion::ConvActivationFusion() : RewriteDriver("conv_activation_fusion", make_rules<ConvActivationRule>()) {}

}  // namespace weir
