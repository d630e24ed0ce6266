#include "passes/fusion/concat_conv_split.h"

#include <cstring>

#include "core/error.h"
#include "ops/elementwise/fused_activation.h"
#include "ops/nn/conv_problem.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

bool plain_node(const Node& node) {
  return node.domain().empty() && node.control_inputs().empty() && node.control_outputs().empty();
}

// A Concat's axis in [0, rank), or -1 when the rank is unknown or the axis out of range.
int64_t concat_axis(const Node& concat) {
  const TensorType& y = concat.output(0)->type();
  if (!concat.has_attr("axis") || !y.shape.has_rank()) return -1;
  int64_t axis = concat.attr("axis").i(), rank = y.shape.rank();
  if (axis < 0) axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

// The Concat that produces `value`, when nothing else reads it and every
// part has a static size along its axis; nullptr otherwise.
Node* splittable_concat(const Graph& graph, const Value* value) {
  Node* concat = value != nullptr ? value->producer() : nullptr;
  if (concat == nullptr || concat->op_type() != "Concat" || !plain_node(*concat) || concat->num_outputs() != 1) return nullptr;
  if (value->uses().size() != 1 || is_graph_output(graph, value) || concat->num_inputs() < 2) return nullptr;
  int64_t axis = concat_axis(*concat);
  if (axis < 0) return nullptr;
  for (const Value* part : concat->inputs()) {
    if (part == nullptr || part->dtype() != value->dtype() || !part->type().shape.has_rank() ||
        part->type().shape.rank() != value->type().shape.rank() || !part->type().shape[static_cast<size_t>(axis)].is_static()) {
      return nullptr;
    }
  }
  return concat;
}

// Elements per example (the batch dim left out, which both sides share); -1
// when another dim is not static.
int64_t elements_per_example(const TensorType& type) {
  if (!type.shape.has_rank() || type.shape.rank() < 1) return -1;
  int64_t n = 1;
  for (size_t i = 1; i < type.shape.dims().size(); ++i) {
    if (!type.shape[i].is_static()) return -1;
    n *= type.shape[i].size();
  }
  return n;
}

bool channels_last(const Node& node) {
  try {
    return conv_layout_is_channels_last(node);
  } catch (const Error&) {
    return false;  // an unknown layout: the verifier names it
  }
}

// Whether `conv` reads `concatenated` (a Concat of `parts` values along
// `axis`) as its X, can take it in parts, and gains by doing so.
bool conv_splits(const Node& conv, const Value* concatenated, int64_t axis, size_t parts) {
  if (conv.op_type() != "Conv" && conv.op_type() != "FusedConv") return false;
  if (!plain_node(conv) || conv.num_outputs() != 1 || conv.num_inputs() < 2 || conv.input(0) != concatenated) return false;
  if (conv.input(1) == nullptr || !conv.input(1)->is_constant() || concatenated->uses().size() != 1) return false;
  if (conv.has_attr("group") && conv.attr("group").i() != 1) return false;
  const TensorType& x = concatenated->type();
  if (!x.shape.has_rank() || x.shape.rank() < 3) return false;
  int64_t channel_axis = channels_last(conv) ? x.shape.rank() - 1 : 1;
  if (axis != channel_axis) return false;
  const Tensor& w = conv.input(1)->data();
  const Dim& channels = x.shape[static_cast<size_t>(axis)];
  if (w.rank() != x.shape.rank() || !channels.is_static() || w.sizes()[1] != channels.size()) return false;
  try {
    FusedActivation::from_node(conv);
  } catch (const Error&) {
    return false;
  }
  int64_t in = elements_per_example(x), out = elements_per_example(conv.output(0)->type());
  return in > 0 && out > 0 && static_cast<int64_t>(parts - 1) * out < in;
}

// Input channels [begin, begin + count) of a conv weight [K, C, kernel...].
Tensor weight_columns(const Tensor& w, int64_t begin, int64_t count) {
  const int64_t k = w.sizes()[0], c = w.sizes()[1];
  const int64_t window = c > 0 && k > 0 ? w.num_elements() / (k * c) : 0;
  std::vector<int64_t> sizes = w.sizes();
  sizes[1] = count;
  Tensor out = Tensor::uninitialized(w.dtype(), sizes);
  const size_t width = dtype_size(w.dtype());
  const auto* in = static_cast<const unsigned char*>(w.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  const auto row_in = static_cast<size_t>(c * window) * width, row_out = static_cast<size_t>(count * window) * width;
  for (int64_t o = 0; o < k; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * row_out, in + static_cast<size_t>(o) * row_in + static_cast<size_t>(begin * window) * width,
                row_out);
  }
  return out;
}

// Conv(Concat(p0, p1, ...)) -> FusedConv(p0, W0, B) -> FusedConv(p1, W1, Z = that) -> ...,
// the activation on the last.
class SplitConvOverConcatRule final : public RewriteRule {
 public:
  std::string name() const override { return "split_conv_over_concat"; }
  std::vector<std::string> root_ops() const override { return {"Conv", "FusedConv"}; }

  bool apply(Node& conv, Rewriter& rw) override {
    if (conv.num_inputs() < 2 || rw.context().registry().find("FusedConv") == nullptr) return false;
    Value* x = conv.input(0);
    Node* concat = splittable_concat(rw.graph(), x);
    if (concat == nullptr || concat->device() != conv.device()) return false;
    int64_t axis = concat_axis(*concat);
    std::vector<Value*> parts = concat->inputs();
    if (!conv_splits(conv, x, axis, parts.size())) return false;

    Graph& graph = rw.graph();
    const Value* weight = conv.input(1);
    FusedActivation activation = FusedActivation::from_node(conv);
    std::map<std::string, Attribute> attributes = conv.attributes();
    attributes.erase("activation_alpha");
    attributes.erase("activation_beta");
    Value* bias = conv.num_inputs() > 2 ? conv.input(2) : nullptr;
    Value* running = conv.num_inputs() > 3 ? conv.input(3) : nullptr;  // an addend the conv already had
    int64_t begin = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      int64_t count = parts[i]->type().shape[static_cast<size_t>(axis)].size();
      std::string suffix = "_part" + std::to_string(i);
      Value* w = graph.add_constant(graph.unique_name(weight->name() + suffix), weight_columns(weight->data(), begin, count));
      begin += count;
      std::vector<Value*> inputs = {parts[i], w, i == 0 ? bias : nullptr, running};
      while (inputs.back() == nullptr) inputs.pop_back();
      std::map<std::string, Attribute> part_attributes = attributes;
      if (i + 1 == parts.size()) {
        activation.to_attributes(part_attributes);
      } else {
        part_attributes["activation"] = Attribute("None");
      }
      Node* part = rw.create(conv, "FusedConv", inputs, 1, part_attributes, graph.unique_name(conv.name() + suffix));
      part->output(0)->set_type(conv.output(0)->type());
      running = part->output(0);
    }
    rw.replace(conv, running);
    return true;
  }
};

// Pool(Concat(p0, p1, ...)) -> Concat(Pool(p0), Pool(p1), ...) along the
// channels, when the pool's only reader is a conv that will then split.
class SinkConcatThroughPoolRule final : public RewriteRule {
 public:
  std::string name() const override { return "sink_concat_through_pool"; }
  std::vector<std::string> root_ops() const override { return {"MaxPool", "AveragePool", "ChannelsLastPool"}; }

  bool apply(Node& pool, Rewriter& rw) override {
    if (!plain_node(pool) || pool.num_inputs() != 1 || pool.num_outputs() != 1) return false;
    Node* concat = splittable_concat(rw.graph(), pool.input(0));
    if (concat == nullptr || concat->device() != pool.device()) return false;
    Value* pooled = pool.output(0);
    const TensorType& type = pooled->type();
    if (!type.shape.has_rank() || pooled->uses().size() != 1 || is_graph_output(rw.graph(), pooled)) return false;
    int64_t axis = concat_axis(*concat);
    int64_t channel_axis = pool.op_type() == "ChannelsLastPool" ? type.shape.rank() - 1 : 1;
    if (axis != channel_axis) return false;
    if (!conv_splits(*pooled->uses()[0].node, pooled, axis, concat->num_inputs())) return false;

    Graph& graph = rw.graph();
    std::vector<Value*> pooled_parts;
    for (size_t i = 0; i < concat->num_inputs(); ++i) {
      Value* part = concat->input(i);
      Node* moved = rw.create(pool, pool.op_type(), {part}, 1, pool.attributes(),
                                   graph.unique_name(pool.name() + "_part" + std::to_string(i)));
      std::vector<Dim> dims = type.shape.dims();
      dims[static_cast<size_t>(axis)] = part->type().shape[static_cast<size_t>(axis)];
      moved->output(0)->set_type({type.dtype, Shape(std::move(dims))});
      pooled_parts.push_back(moved->output(0));
    }
    Node* joined = rw.create(*concat, "Concat", pooled_parts, 1, {{"axis", Attribute(axis)}}, graph.unique_name(concat->name() + "_pooled"));
    joined->output(0)->set_type(type);
    rw.replace(pool, joined->output(0));
    return true;
  }
};

}  // namespace

ConcatConvSplit::ConcatConvSplit()
    : RewriteDriver("concat_conv_split", make_rules<SinkConcatThroughPoolRule, SplitConvOverConcatRule>()) {}

}  // namespace weir
