#include "passes/fusion/conv_activation_fusion.h"

#include "ops/elementwise/fused_activation.h"
#include "passes/fusion/activation_match.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

class ConvActivationRule final : public RewriteRule {
 public:
  std::string name() const override { return "conv_activation"; }
  std::vector<std::string> root_ops() const override {
    return fusable_activation_ops();
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
    Node* fused = rw.create(*conv, "FusedConv", conv->inputs(), 1, attributes,
                                      rw.graph().unique_name(conv->name() + "_" + FusedActivation::name(act->kind)));
    fused->output(0)->set_type(root.output(0)->type());
    rw.replace(root, fused->output(0));
    return true;
  }
};

}  // namespace

ConvActivationFusion::ConvActivationFusion() : RewriteDriver("conv_activation_fusion", make_rules<ConvActivationRule>()) {}

}  // namespace weir
