#include "passes/fusion/conv_input_affine_folding.h"

#include <optional>

#include "core/error.h"
#include "ops/nn/conv_problem.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

// input * scale + shift, one pair per input channel.
struct ChannelAffine {
  std::vector<double> scale, shift;
};

double element(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kFloat64 ? t.data<double>()[i] : static_cast<double>(t.data<float>()[i]);
}

// A constant's value per channel, when it broadcasts against a tensor of
// `rank` with `channels` at `channel_axis` and is constant along every other
// axis (a scalar, [C, 1, 1], [1, C, 1, 1], or [C] for channels last).
std::optional<std::vector<double>> per_channel(const Value* value, int64_t rank, int64_t channel_axis, int64_t channels) {
  if (value == nullptr || !value->is_constant()) return std::nullopt;
  const Tensor& t = value->data();
  if ((t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) || t.rank() > rank) return std::nullopt;
  bool along_channels = false;
  for (int64_t i = 0; i < t.rank(); ++i) {
    int64_t size = t.sizes()[static_cast<size_t>(i)];
    if (size == 1) continue;
    if (rank - t.rank() + i != channel_axis || size != channels) return std::nullopt;
    along_channels = true;
  }
  std::vector<double> values(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) values[static_cast<size_t>(c)] = element(t, along_channels ? c : 0);
  return values;
}

// One link of the chain above the conv: `node` computes an affine map of
// its operand `source` with a per-channel constant.
struct Link {
  const Node* node;
  Value* source;
  std::vector<double> constant;
  bool constant_first;  // Sub(k, u) rather than Sub(u, k)
};

std::optional<Link> affine_link(const Graph& graph, const Value* value, int64_t channel_axis, int64_t channels) {
  Node* node = value->producer();
  if (node == nullptr || !node->domain().empty() || node->num_inputs() != 2 || node->num_outputs() != 1) return std::nullopt;
  const std::string& op = node->op_type();
  if (op != "Add" && op != "Sub" && op != "Mul" && op != "Div") return std::nullopt;
  if (!node->control_inputs().empty() || !node->control_outputs().empty()) return std::nullopt;
  if (value->uses().size() != 1 || is_graph_output(graph, value)) return std::nullopt;
  int64_t rank = value->type().shape.rank();
  for (int side = 1; side >= 0; --side) {
    if (side == 0 && op == "Div") break;  // k / u is not affine in u
    Value* source = node->input(static_cast<size_t>(1 - side));
    // The operand must already have the result's shape: no broadcasting up to it.
    if (source == nullptr || source->is_constant() || !(source->type() == value->type())) continue;
    std::optional<std::vector<double>> k = per_channel(node->input(static_cast<size_t>(side)), rank, channel_axis, channels);
    if (!k) continue;
    if (op == "Div") {
      for (double v : *k) {
        if (v == 0.0) return std::nullopt;
      }
    }
    return Link{node, source, std::move(*k), side == 0};
  }
  return std::nullopt;
}

// Composes the links from the source down to the conv (`links` is conv-side first).
ChannelAffine compose(const std::vector<Link>& links, int64_t channels) {
  ChannelAffine a{std::vector<double>(static_cast<size_t>(channels), 1.0), std::vector<double>(static_cast<size_t>(channels), 0.0)};
  for (auto link = links.rbegin(); link != links.rend(); ++link) {
    const std::string& op = link->node->op_type();
    for (size_t c = 0; c < a.scale.size(); ++c) {
      double k = link->constant[c];
      if (op == "Add") {
        a.shift[c] += k;
      } else if (op == "Sub" && !link->constant_first) {
        a.shift[c] -= k;
      } else if (op == "Sub") {
        a.scale[c] = -a.scale[c];
        a.shift[c] = k - a.shift[c];
      } else if (op == "Mul") {
        a.scale[c] *= k;
        a.shift[c] *= k;
      } else {
        a.scale[c] /= k;
        a.shift[c] /= k;
      }
    }
  }
  return a;
}

bool pads_nothing(const Node& conv) {
  if (conv.has_attr("auto_pad")) {
    const std::string& mode = conv.attr("auto_pad").s();
    if (mode != "NOTSET" && mode != "VALID") return false;
  }
  if (!conv.has_attr("pads")) return true;
  for (int64_t p : conv.attr("pads").ints()) {
    if (p != 0) return false;
  }
  return true;
}

void store(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::kFloat64) {
    t.data<double>()[i] = v;
  } else {
    t.data<float>()[i] = static_cast<float>(v);
  }
}

class FoldInputAffineRule final : public RewriteRule {
 public:
  std::string name() const override { return "fold_conv_input_affine"; }
  std::vector<std::string> root_ops() const override { return {"Conv", "FusedConv"}; }

  bool apply(Node& conv, Rewriter& rw) override {
    if (conv.num_inputs() < 2 || conv.input(0) == nullptr || conv.input(1) == nullptr || !conv.input(1)->is_constant()) return false;
    if (conv.num_outputs() != 1 || !conv.control_inputs().empty() || !conv.control_outputs().empty()) return false;
    Value* bias = conv.num_inputs() > 2 ? conv.input(2) : nullptr;
    if (bias != nullptr && !bias->is_constant()) return false;
    const Tensor& w = conv.input(1)->data();
    const TensorType& x = conv.input(0)->type();
    if ((w.dtype() != DType::kFloat32 && w.dtype() != DType::kFloat64) || x.dtype != w.dtype()) return false;
    if (!x.shape.has_rank() || x.shape.rank() < 3 || w.rank() != x.shape.rank()) return false;
    bool last = false;
    try {
      last = conv_layout_is_channels_last(conv);
    } catch (const Error&) {
      return false;  // the verifier names the layout
    }
    const int64_t channel_axis = last ? x.shape.rank() - 1 : 1;
    const Dim& channel_dim = x.shape[static_cast<size_t>(channel_axis)];
    const int64_t group = conv.has_attr("group") ? conv.attr("group").i() : 1;
    if (!channel_dim.is_static() || group < 1 || w.sizes()[1] * group != channel_dim.size()) return false;
    const int64_t channels = channel_dim.size();

    std::vector<Link> links;
    const Value* at = conv.input(0);
    while (std::optional<Link> link = affine_link(rw.graph(), at, channel_axis, channels)) {
      at = link->source;
      links.push_back(std::move(*link));
    }
    if (links.empty()) return false;
    ChannelAffine affine = compose(links, channels);
    bool shifts = false;
    for (double t : affine.shift) shifts = shifts || t != 0.0;
    if (shifts && !pads_nothing(conv)) return false;

    const int64_t out_channels = w.sizes()[0], per_group_in = w.sizes()[1];
    const int64_t window = w.num_elements() / (out_channels * per_group_in), per_group_out = out_channels / group;
    Tensor new_w = Tensor::uninitialized(w.dtype(), w.sizes());
    Tensor new_b(w.dtype(), {out_channels});
    for (int64_t k = 0; k < out_channels; ++k) {
      double sum = bias != nullptr ? element(bias->data(), k) : 0.0;
      for (int64_t j = 0; j < per_group_in; ++j) {
        const auto c = static_cast<size_t>((k / per_group_out) * per_group_in + j);
        for (int64_t i = 0; i < window; ++i) {
          int64_t index = (k * per_group_in + j) * window + i;
          double weight = element(w, index);
          store(new_w, index, weight * affine.scale[c]);
          sum += weight * affine.shift[c];
        }
      }
      store(new_b, k, sum);
    }
    Graph& graph = rw.graph();
    std::vector<Value*> inputs = conv.inputs();
    inputs[0] = links.back().source;
    inputs[1] = graph.add_constant(graph.unique_name(conv.input(1)->name() + "_input_folded"), std::move(new_w));
    if (bias != nullptr || shifts) {
      inputs.resize(std::max<size_t>(inputs.size(), 3), nullptr);
      inputs[2] = graph.add_constant(graph.unique_name(conv.name() + "_bias_input_folded"), std::move(new_b));
    }
    Node* folded = rw.create(conv, conv.op_type(), inputs, 1, conv.attributes(), graph.unique_name(conv.name() + "_input_folded"));
    folded->output(0)->set_type(conv.output(0)->type());
    rw.replace(conv, folded->output(0));
    return true;
  }
};

}  // namespace

ConvInputAffineFolding::ConvInputAffineFolding()
    : RewriteDriver("conv_input_affine_folding", make_rules<FoldInputAffineRule>()) {}

}  // namespace weir
