#include "passes/fusion/qdq_residual_fusion.h"

#include "ops/quantization/quantization_common.h"
#include "passes/fusion/qdq_match.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

// One constant value of `dtype` (a per-tensor scale or zero point).
bool one_constant(const Value* v, DType dtype) {
  return has_constant_data(v) && v->data().num_elements() == 1 && v->data().dtype() == dtype;
}

// A per-tensor DequantizeLinear of an i8 or u8 value.
std::optional<Dequantized> per_tensor_dequantize(const Rewriter& rw, const Value* value) {
  std::optional<Dequantized> d = dequantized(rw, value);
  if (!d || !is_quantized_dtype(d->q->dtype()) || !per_tensor(*d)) return std::nullopt;
  if (d->zero != nullptr && d->zero->data().dtype() != d->q->dtype()) return std::nullopt;
  return d;
}

// An int8 conv that can take an addend: QLinearConv, or FusedQLinearConv
// channels-first with no activation and no addend, with per-tensor output
// parameters.
bool takes_an_addend(const Node* conv) {
  if (conv == nullptr || !conv->domain().empty() || conv->num_outputs() != 1 || !conv->control_outputs().empty()) {
    return false;
  }
  if (conv->num_inputs() < 8 || conv->num_inputs() > 9) return false;
  if (conv->op_type() == "FusedQLinearConv") {
    if (conv->has_attr("activation") && conv->attr("activation").s() != "None") return false;
    if (conv->has_attr("layout") && conv->attr("layout").s() != "NCHW") return false;
  } else if (conv->op_type() != "QLinearConv") {
    return false;
  }
  return one_constant(conv->input(6), DType::kFloat32) && conv->input(7) != nullptr;
}

class QdqResidualRule final : public RewriteRule {
 public:
  std::string name() const override { return "qdq_residual"; }
  std::vector<std::string> root_ops() const override { return {"QuantizeLinear"}; }

  bool apply(Node& quantize, Rewriter& rw) override {
    if (rw.context().registry().find("FusedQLinearConv") == nullptr) return false;
    if (quantize.num_inputs() < 2 || quantize.num_outputs() != 1 || quantize.input(0) == nullptr) return false;
    Value* y_scale = quantize.input(1);
    Value* y_zero = quantize.num_inputs() > 2 ? quantize.input(2) : nullptr;
    const DType y_dtype = quantize.output(0)->dtype();
    if (!is_quantized_dtype(y_dtype) || !one_constant(y_scale, DType::kFloat32)) return false;
    if (y_zero != nullptr && !one_constant(y_zero, y_dtype)) return false;
    Graph& graph = rw.graph();
    auto single_reader = [&](const Value* v) { return v->uses().size() == 1 && !is_graph_output(graph, v); };
    Value* sum = quantize.input(0);
    if (sum->dtype() != DType::kFloat32 || !single_reader(sum)) return false;
    Node* relu = rw.producer_of(sum, "Relu");
    if (relu != nullptr) {
      sum = relu->input(0);
      if (sum == nullptr || !single_reader(sum)) return false;
    }
    Node* add = rw.producer_of(sum, "Add");
    if (add == nullptr || add->num_inputs() != 2 || add->input(0) == nullptr || add->input(1) == nullptr) return false;
    if (add->device() != quantize.device() || !add->control_outputs().empty()) return false;
    const Shape& out_shape = sum->type().shape;
    if (!out_shape.has_rank()) return false;
    for (int side = 0; side < 2; ++side) {
      Value* from_conv = add->input(static_cast<size_t>(side));
      Value* addend = add->input(static_cast<size_t>(1 - side));
      if (from_conv == addend || !single_reader(from_conv)) continue;
      // No broadcasting: the addend is read as a tensor shaped like the output.
      if (!(from_conv->type().shape == out_shape) || !(addend->type().shape == out_shape)) continue;
      std::optional<Dequantized> c = per_tensor_dequantize(rw, from_conv);
      std::optional<Dequantized> z = per_tensor_dequantize(rw, addend);
      if (!c || !z || !single_reader(c->q)) continue;
      Node* conv = c->q->producer();
      if (!takes_an_addend(conv) || conv->device() != quantize.device() || z->q == c->q) continue;
      // The conv's output must mean what its DequantizeLinear says it means.
      if (!same_value(conv->input(6), c->scale, DType::kFloat32) || !same_value(conv->input(7), c->zero, c->q->dtype())) {
        continue;
      }
      // The sum post-op reads the addend where y goes: same shape and type.
      if (!(z->q->type().shape == out_shape) || z->q->dtype() != y_dtype) continue;
      std::vector<Value*> inputs = conv->inputs();
      inputs.resize(9, nullptr);
      inputs[6] = y_scale;
      inputs[7] = y_zero != nullptr ? y_zero : zero_constant(graph, y_dtype, {}, quantize.name() + "_zero_point");
      inputs.push_back(z->q);
      inputs.push_back(z->scale);
      inputs.push_back(z->zero != nullptr ? z->zero
                                          : zero_constant(graph, z->q->dtype(), {}, addend->name() + "_zero_point"));
      std::map<std::string, Attribute> attributes = conv->attributes();
      attributes["activation"] = Attribute(relu != nullptr ? "Relu" : "None");
      Node* fused = rw.create(*conv, "FusedQLinearConv", inputs, 1, attributes,
                              graph.unique_name(conv->name() + "_add"));
      fused->output(0)->set_type(quantize.output(0)->type());
      rw.replace(quantize, fused->output(0));
      return true;
    }
    return false;
  }
};

}  // namespace

QdqResidualFusion::QdqResidualFusion() : RewriteDriver("qdq_residual_fusion", make_rules<QdqResidualRule>()) {}

}  // namespace weir
