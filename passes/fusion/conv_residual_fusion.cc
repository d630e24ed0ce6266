#include "passes/fusion/conv_residual_fusion.h"

#include "ops/elementwise/fused_activation.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

// A Conv, or a FusedConv with neither activation nor addend yet, whose only
// reader is the Add.
bool takes_an_addend(const Node* conv) {
  if (conv == nullptr || !conv->domain().empty() || !conv->control_outputs().empty()) return false;
  if (conv->op_type() == "Conv") return true;
  return conv->op_type() == "FusedConv" && FusedActivation::from_node(*conv).none() &&
         (conv->num_inputs() < 4 || conv->input(3) == nullptr);
}

class ConvResidualRule final : public RewriteRule {
 public:
  std::string name() const override { return "conv_residual"; }
  std::vector<std::string> root_ops() const override { return {"Add"}; }

  bool apply(Node& add, Rewriter& rw) override {
    if (add.num_inputs() != 2 || rw.context().registry().find("FusedConv") == nullptr) return false;
    const TensorType& out = add.output(0)->type();
    if (!out.shape.has_rank()) return false;
    for (int side = 0; side < 2; ++side) {
      Value* y = add.input(static_cast<size_t>(side));
      Value* z = add.input(static_cast<size_t>(1 - side));
      Node* conv = y->producer();
      if (!takes_an_addend(conv) || y->uses().size() != 1 || is_graph_output(rw.graph(), y) || y == z) continue;
      // No broadcasting: the addend is read as a tensor shaped like the output.
      if (!(y->type().shape == out.shape) || !(z->type().shape == out.shape) || z->dtype() != y->dtype()) continue;
      if (conv->device() != add.device()) continue;
      std::vector<Value*> inputs = conv->inputs();
      inputs.resize(3, nullptr);
      inputs.push_back(z);
      std::map<std::string, Attribute> attributes = conv->attributes();
      if (!attributes.count("activation")) attributes["activation"] = Attribute("None");
      Node* fused = rw.create(*conv, "FusedConv", inputs, 1, attributes, rw.graph().unique_name(conv->name() + "_add"));
      fused->output(0)->set_type(out);
      rw.replace(add, fused->output(0));
      return true;
    }
    return false;
  }
};

}  // namespace

ConvResidualFusion::ConvResidualFusion() : RewriteDriver("conv_residual_fusion", make_rules<ConvResidualRule>()) {}

}  // namespace weir
