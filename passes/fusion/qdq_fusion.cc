#include "passes/fusion/qdq_fusion.h"

#include <cmath>
#include <limits>
#include <optional>

#include "ops/linalg/gemm_attributes.h"
#include "ops/quantization/quantization_common.h"
#include "passes/fusion/qdq_match.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

// A weight's parameters: per tensor, or [channels] along `axis` of a `rank`-D weight.
bool per_axis(const Dequantized& d, int64_t rank, int64_t axis, int64_t channels) {
  if (per_tensor(d)) return true;
  const Tensor& scale = d.scale->data();
  int64_t own = d.axis < 0 ? d.axis + rank : d.axis;
  return scale.rank() == 1 && scale.num_elements() == channels && own == axis;
}

std::vector<float> floats_of(const Tensor& t) {
  const float* data = t.data<float>();
  return std::vector<float>(data, data + t.num_elements());
}

int64_t integer_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kInt8: return t.data<int8_t>()[i];
    case DType::kUInt8: return t.data<uint8_t>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    default: return 0;
  }
}

// `d`'s zero point, or a zero of `dtype` shaped like its scale.
Value* zero_point_of(Graph& graph, const Dequantized& d, DType dtype, const std::string& name) {
  return d.zero != nullptr ? d.zero : zero_constant(graph, dtype, d.scale->data().sizes(), name);
}

// The matched tail: root QuantizeLinear, an optional Relu, the f32 producer.
struct Tail {
  Node* quantize = nullptr;
  Node* relu = nullptr;
  Node* producer = nullptr;
  Value* y_scale = nullptr;
  Value* y_zero = nullptr;
  DType y_dtype = DType::kUInt8;
};

std::optional<Tail> tail_of(Node& quantize, Rewriter& rw) {
  if (quantize.num_inputs() < 2 || quantize.num_outputs() != 1) return std::nullopt;
  Tail t{&quantize, nullptr, nullptr, quantize.input(1), quantize.num_inputs() > 2 ? quantize.input(2) : nullptr,
         quantize.output(0)->dtype()};
  if (!is_quantized_dtype(t.y_dtype) || !has_constant_data(t.y_scale) || t.y_scale->data().num_elements() != 1 ||
      t.y_scale->data().dtype() != DType::kFloat32) {
    return std::nullopt;
  }
  if (t.y_zero != nullptr && (!has_constant_data(t.y_zero) || t.y_zero->data().num_elements() != 1)) return std::nullopt;
  Value* y = quantize.input(0);
  if (y == nullptr || y->dtype() != DType::kFloat32 || y->uses().size() != 1 || is_graph_output(rw.graph(), y)) {
    return std::nullopt;
  }
  t.relu = rw.producer_of(y, "Relu");
  if (t.relu != nullptr) {
    y = t.relu->input(0);
    if (y == nullptr || y->uses().size() != 1 || is_graph_output(rw.graph(), y)) return std::nullopt;
  }
  t.producer = y->producer();
  if (t.producer == nullptr || !t.producer->domain().empty() || t.producer->num_outputs() != 1 ||
      !t.producer->control_outputs().empty() || t.producer->device() != quantize.device()) {
    return std::nullopt;
  }
  return t;
}

Value* y_zero_of(Graph& graph, const Tail& t) {
  return t.y_zero != nullptr ? t.y_zero : zero_constant(graph, t.y_dtype, {}, t.quantize->name() + "_zero_point");
}

// The conv bias as i32 at scale x_scale * w_scale[m]: an f32 constant, or
// DequantizeLinear of constants; nullopt when it is neither.
std::optional<Tensor> quantized_bias(const Rewriter& rw, Value* bias, float x_scale, const std::vector<float>& w_scales,
                                     int64_t channels) {
  std::vector<float> values;
  if (has_constant_data(bias) && bias->data().dtype() == DType::kFloat32) {
    values = floats_of(bias->data());
  } else if (std::optional<Dequantized> d = dequantized(rw, bias); d && has_constant_data(d->q) && per_tensor(*d)) {
    const Tensor& q = d->q->data();
    float scale = d->scale->data().data<float>()[0];
    int64_t zero = d->zero != nullptr ? integer_at(d->zero->data(), 0) : 0;
    for (int64_t i = 0; i < q.num_elements(); ++i) {
      values.push_back(static_cast<float>(integer_at(q, i) - zero) * scale);  // as DequantizeLinear computes it
    }
  } else {
    return std::nullopt;
  }
  if (static_cast<int64_t>(values.size()) != channels) return std::nullopt;
  Tensor out = Tensor::uninitialized(DType::kInt32, {channels});
  for (int64_t m = 0; m < channels; ++m) {
    float scale = x_scale * w_scales[w_scales.size() == 1 ? 0 : static_cast<size_t>(m)];
    if (!(scale > 0)) return std::nullopt;
    double q = std::nearbyint(static_cast<double>(values[static_cast<size_t>(m)]) / static_cast<double>(scale));
    if (!(std::abs(q) < 2147483647.0)) return std::nullopt;
    out.data<int32_t>()[m] = static_cast<int32_t>(q);
  }
  return out;
}

// DequantizeLinear -> Conv [-> Relu] -> QuantizeLinear.
bool fuse_conv(Rewriter& rw, const Tail& t) {
  Node& conv = *t.producer;
  if (conv.num_inputs() < 2) return false;
  std::optional<Dequantized> x = dequantized(rw, conv.input(0));
  std::optional<Dequantized> w = dequantized(rw, conv.input(1));
  if (!x || !w || !is_quantized_dtype(x->q->dtype()) || !per_tensor(*x) || !has_constant_data(w->q) || !is_quantized_dtype(w->q->data().dtype())) {
    return false;
  }
  const Tensor& weights = w->q->data();
  if (weights.rank() < 3) return false;
  const int64_t channels = weights.sizes()[0];
  if (!per_axis(*w, weights.rank(), 0, channels)) return false;
  const float x_scale = x->scale->data().data<float>()[0];
  const std::vector<float> w_scales = floats_of(w->scale->data());
  Graph& graph = rw.graph();
  std::vector<Value*> inputs = {x->q,
                                x->scale,
                                zero_point_of(graph, *x, x->q->dtype(), conv.name() + "_x_zero_point"),
                                w->q,
                                w->scale,
                                zero_point_of(graph, *w, weights.dtype(), conv.name() + "_w_zero_point"),
                                t.y_scale,
                                y_zero_of(graph, t)};
  if (conv.num_inputs() > 2 && conv.input(2) != nullptr) {
    std::optional<Tensor> bias = quantized_bias(rw, conv.input(2), x_scale, w_scales, channels);
    if (!bias) return false;
    inputs.push_back(graph.add_constant(graph.unique_name(conv.name() + "_bias_i32"), *bias));
  }
  std::map<std::string, Attribute> attributes = conv.attributes();
  std::string op = "QLinearConv";
  if (t.relu != nullptr) {
    op = "FusedQLinearConv";
    attributes["activation"] = Attribute("Relu");
  }
  Node* fused = rw.create(conv, op, inputs, 1, attributes, graph.unique_name(conv.name() + "_int8"));
  fused->output(0)->set_type(t.quantize->output(0)->type());
  rw.replace(*t.quantize, fused->output(0));
  return true;
}

// DequantizeLinear -> MatMul | Gemm -> QuantizeLinear, B a constant [K, N]
// (or [N, K] under Gemm's transB, transposed here).
bool fuse_matmul(Rewriter& rw, const Tail& t) {
  Node& node = *t.producer;
  const bool gemm = node.op_type() == "Gemm";
  if (t.relu != nullptr || node.num_inputs() < 2) return false;
  bool trans_b = false;
  if (gemm) {
    const GemmAttributes attributes(node);
    if (node.num_inputs() > 2 && node.input(2) != nullptr) return false;  // QLinearMatMul has no bias
    if (attributes.alpha != 1.0 || attributes.transpose_a) return false;
    trans_b = attributes.transpose_b;
  }
  std::optional<Dequantized> a = dequantized(rw, node.input(0));
  std::optional<Dequantized> b = dequantized(rw, node.input(1));
  if (!a || !b || !is_quantized_dtype(a->q->dtype()) || !per_tensor(*a) || !has_constant_data(b->q) || !is_quantized_dtype(b->q->data().dtype())) {
    return false;
  }
  const Tensor& weights = b->q->data();
  if (weights.rank() != 2) return false;
  const int64_t n = trans_b ? weights.sizes()[0] : weights.sizes()[1];
  if (!per_axis(*b, 2, trans_b ? 0 : 1, n)) return false;
  Graph& graph = rw.graph();
  Value* b_q = b->q;
  if (trans_b) {
    const int64_t k = weights.sizes()[1];
    Tensor transposed = Tensor::uninitialized(weights.dtype(), {k, n});
    const auto* in = static_cast<const uint8_t*>(weights.raw_data());
    auto* out = static_cast<uint8_t*>(transposed.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < k; ++j) out[j * n + i] = in[i * k + j];
    }
    b_q = graph.add_constant(graph.unique_name(b->q->name() + "_transposed"), transposed);
  }
  std::vector<Value*> inputs = {a->q,
                                a->scale,
                                zero_point_of(graph, *a, a->q->dtype(), node.name() + "_a_zero_point"),
                                b_q,
                                b->scale,
                                zero_point_of(graph, *b, weights.dtype(), node.name() + "_b_zero_point"),
                                t.y_scale,
                                y_zero_of(graph, t)};
  Node* fused = rw.create(node, "QLinearMatMul", inputs, 1, {}, graph.unique_name(node.name() + "_int8"));
  fused->output(0)->set_type(t.quantize->output(0)->type());
  rw.replace(*t.quantize, fused->output(0));
  return true;
}

// DequantizeLinear -> MaxPool -> QuantizeLinear at the same scale and zero
// point: MaxPool on the integers. Exact: dequantization is increasing (a
// positive scale) so the maximum commutes with it, and quantizing a
// dequantized value at its own parameters gives the integer back.
bool fuse_max_pool(Rewriter& rw, const Tail& t) {
  Node& pool = *t.producer;
  if (t.relu != nullptr || pool.num_inputs() != 1 || pool.num_outputs() != 1) return false;
  std::optional<Dequantized> x = dequantized(rw, pool.input(0));
  if (!x || !per_tensor(*x) || x->q->dtype() != t.y_dtype) return false;
  if (!(x->scale->data().data<float>()[0] > 0) || !std::isfinite(x->scale->data().data<float>()[0])) return false;
  if (!same_value(x->scale, t.y_scale, DType::kFloat32) || !same_value(x->zero, t.y_zero, t.y_dtype)) return false;
  Node* fused = rw.create(pool, "MaxPool", {x->q}, 1, pool.attributes(), rw.graph().unique_name(pool.name() + "_int8"));
  fused->output(0)->set_type(t.quantize->output(0)->type());
  rw.replace(*t.quantize, fused->output(0));
  return true;
}

class QdqRule final : public RewriteRule {
 public:
  std::string name() const override { return "qdq"; }
  std::vector<std::string> root_ops() const override { return {"QuantizeLinear"}; }

  bool apply(Node& quantize, Rewriter& rw) override {
    std::optional<Tail> t = tail_of(quantize, rw);
    if (!t) return false;
    const std::string& op = t->producer->op_type();
    if (op == "Conv") return fuse_conv(rw, *t);
    if (op == "MatMul" || op == "Gemm") return fuse_matmul(rw, *t);
    if (op == "MaxPool") return fuse_max_pool(rw, *t);
    return false;
  }
};

}  // namespace

QdqFusion::QdqFusion() : RewriteDriver("qdq_fusion", make_rules<QdqRule>()) {}

}  // namespace weir
