#include "passes/layout/channels_last_layout.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/nn/conv_problem.h"
#include "ops/nn/dnnl_pool.h"
#include "ops/nn/pool_problem.h"
#include "passes/graph_match.h"
#include "passes/rewrite_rule.h"

namespace weir {

namespace {

// [0, 2, ..., r-1, 1]: channels-first to channels-last.
std::vector<int64_t> to_last_perm(int64_t rank) {
  std::vector<int64_t> perm = {0};
  for (int64_t i = 2; i < rank; ++i) perm.push_back(i);
  perm.push_back(1);
  return perm;
}

// [0, r-1, 1, ..., r-2]: channels-last back to channels-first.
std::vector<int64_t> to_first_perm(int64_t rank) {
  std::vector<int64_t> perm = {0, rank - 1};
  for (int64_t i = 1; i < rank - 1; ++i) perm.push_back(i);
  return perm;
}

TensorType permuted(const TensorType& type, const std::vector<int64_t>& perm) {
  if (!type.shape.has_rank() || type.shape.rank() != static_cast<int64_t>(perm.size())) return {type.dtype, Shape::unknown_rank()};
  std::vector<Dim> dims;
  for (int64_t axis : perm) dims.push_back(type.shape[static_cast<size_t>(axis)]);
  return {type.dtype, Shape(std::move(dims))};
}

Node* add_transpose(Graph& graph, Value* input, const std::vector<int64_t>& perm, const std::string& name,
                    const std::optional<Device>& device) {
  Node* t = graph.add_node("Transpose", {input}, 1, {{"perm", Attribute(perm)}}, graph.unique_name(name));
  if (device) t->set_device(*device);
  t->output(0)->set_type(permuted(input->type(), perm));
  return t;
}

// The channels-last form of a constant that broadcasts against a
// channels-first value of `rank`: padded with leading 1s to `rank`, then
// permuted. Small constants only (per-channel scales and shifts).
std::optional<Tensor> channels_last_constant(const Tensor& c, int64_t rank) {
  if (c.rank() > rank || c.num_elements() > (1 << 20)) return std::nullopt;
  std::vector<int64_t> sizes(static_cast<size_t>(rank - c.rank()), 1);
  for (int64_t s : c.sizes()) sizes.push_back(s);
  std::vector<int64_t> perm = to_last_perm(rank);
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1), out_sizes(static_cast<size_t>(rank));
  for (int64_t i = rank - 1; i > 0; --i) strides[static_cast<size_t>(i - 1)] = strides[static_cast<size_t>(i)] * sizes[static_cast<size_t>(i)];
  for (size_t i = 0; i < perm.size(); ++i) out_sizes[i] = sizes[static_cast<size_t>(perm[i])];
  Tensor out = Tensor::uninitialized(c.dtype(), out_sizes);
  const size_t width = dtype_size(c.dtype());
  const auto* in = static_cast<const unsigned char*>(c.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t flat = 0; flat < out.num_elements(); ++flat) {
    int64_t offset = 0;
    for (size_t i = 0; i < index.size(); ++i) offset += index[i] * strides[static_cast<size_t>(perm[i])];
    std::memcpy(dst + static_cast<size_t>(flat) * width, in + static_cast<size_t>(offset) * width, width);
    for (size_t i = index.size(); i-- > 0;) {
      if (++index[i] < out_sizes[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

// `value` transposed to channels-last: an existing Transpose that does it, else a new one.
Value* to_channels_last(Graph& graph, Value* value, int64_t rank, const std::optional<Device>& device) {
  std::vector<int64_t> perm = to_last_perm(rank);
  for (const Use& use : value->uses()) {
    Node* reader = use.node;
    if (reader->op_type() == "Transpose" && reader->domain().empty() && transpose_perm(*reader) == perm) return reader->output(0);
  }
  return add_transpose(graph, value, perm, value->name() + "_to_nhwc", device)->output(0);
}

bool is_channels_first_transpose(const Node* node) {
  if (node == nullptr || node->op_type() != "Transpose" || !node->domain().empty()) return false;
  std::vector<int64_t> perm = transpose_perm(*node);
  return perm.size() >= 3 && perm == to_first_perm(static_cast<int64_t>(perm.size()));
}

bool pure_elementwise(const Node& node, const PassContext& context) {
  const OpSchema* schema = context.registry().find(node.op_type(), node.domain());
  return schema != nullptr && schema->has(OpTrait::kElementwise) && !schema->has(OpTrait::kStateful) &&
         !schema->has(OpTrait::kSideEffects) && node.num_outputs() == 1 && node.control_inputs().empty() &&
         node.control_outputs().empty();
}

// Transpose(Transpose(x, p), q): x itself when the two cancel, else one Transpose.
class TransposePairRule final : public RewriteRule {
 public:
  std::string name() const override { return "transpose_pair"; }
  std::vector<std::string> root_ops() const override { return {"Transpose"}; }
  bool apply(Node& outer, Rewriter& rw) override {
    Node* inner = rw.producer_of(outer.input(0), "Transpose");
    if (inner == nullptr || !outer.control_inputs().empty()) return false;
    std::vector<int64_t> p = transpose_perm(*inner), q = transpose_perm(outer);
    if (p.empty() || p.size() != q.size()) return false;
    std::vector<int64_t> combined;
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i) {
      combined.push_back(p[static_cast<size_t>(q[i])]);
      identity = identity && combined.back() == static_cast<int64_t>(i);
    }
    if (identity) {
      // At a graph output the pair stays: the output would take the source's name.
      if (is_graph_output(rw.graph(), outer.output(0))) return false;
      rw.replace(outer, inner->input(0));
      return true;
    }
    Node* merged = add_transpose(rw.graph(), inner->input(0), combined, outer.name(), outer.device());
    rw.replace(outer, merged->output(0));
    return true;
  }
};

// op(Transpose(a)) -> Transpose(op(a)) for an elementwise op whose other
// inputs are one-element values, and op(Transpose(a), Transpose(b)) ->
// Transpose(op(a, b)), and op(Transpose(a), c) -> Transpose(op(a, c')) for
// a constant c whose channels-last form c' is made here: the back-Transpose
// moves down the net until something that is not elementwise reads it.
class SinkTransposeRule final : public RewriteRule {
 public:
  explicit SinkTransposeRule(std::vector<std::string> ops) : ops_(std::move(ops)) {}
  std::string name() const override { return "sink_transpose"; }
  std::vector<std::string> root_ops() const override { return ops_; }

  bool apply(Node& op, Rewriter& rw) override {
    if (!pure_elementwise(op, rw.context())) return false;
    int64_t rank = 0;
    Node* first = nullptr;
    for (Value* input : op.inputs()) {
      Node* producer = input != nullptr ? input->producer() : nullptr;
      if (is_channels_first_transpose(producer)) {
        first = producer;
        rank = static_cast<int64_t>(transpose_perm(*producer).size());
        break;
      }
    }
    if (first == nullptr || !op.output(0)->type().shape.has_rank() || op.output(0)->type().shape.rank() != rank) return false;
    const Shape& out_shape = op.output(0)->type().shape;
    std::vector<Value*> inputs;
    for (Value* input : op.inputs()) {
      if (input == nullptr) {
        inputs.push_back(nullptr);
        continue;
      }
      Node* producer = input->producer();
      if (is_channels_first_transpose(producer) && static_cast<int64_t>(transpose_perm(*producer).size()) == rank &&
          input->type().shape == out_shape) {
        inputs.push_back(producer->input(0));
        continue;
      }
      const Tensor* data = input->is_constant() ? &input->data() : nullptr;
      if (data != nullptr && data->num_elements() == 1) {
        inputs.push_back(input);
        continue;
      }
      if (data != nullptr) {
        std::optional<Tensor> last = channels_last_constant(*data, rank);
        if (!last) return false;
        inputs.push_back(rw.graph().add_constant(rw.graph().unique_name(input->name() + "_nhwc"), std::move(*last)));
        continue;
      }
      // A channels-first value of the full output shape (a residual from a
      // pooling, say): it is transposed instead, so the op and what follows
      // can stay channels-last. An existing transpose of it is reused.
      if (!(input->type().shape == out_shape)) return false;
      inputs.push_back(to_channels_last(rw.graph(), input, rank, op.device()));
    }
    Node* moved = rw.create(op, op.op_type(), inputs, 1, op.attributes(), rw.graph().unique_name(op.name() + "_nhwc"));
    moved->output(0)->set_type(permuted(op.output(0)->type(), to_last_perm(rank)));
    Node* back = add_transpose(rw.graph(), moved->output(0), to_first_perm(rank), op.name() + "_to_nchw", op.device());
    rw.replace(op, back->output(0));
    return true;
  }

 private:
  std::vector<std::string> ops_;
};

// QuantizeLinear / DequantizeLinear of a back-Transpose, with one scale and
// zero point: elementwise, so the Transpose moves below it (the QDQ pairs
// between int8 convs then let the Transposes meet and cancel).
class SinkTransposeThroughQuantizationRule final : public RewriteRule {
 public:
  std::string name() const override { return "sink_transpose_through_quantization"; }
  std::vector<std::string> root_ops() const override { return {"QuantizeLinear", "DequantizeLinear"}; }

  bool apply(Node& op, Rewriter& rw) override {
    if (op.num_inputs() < 2 || op.num_outputs() != 1 || op.input(0) == nullptr) return false;
    Node* transpose = op.input(0)->producer();
    if (!is_channels_first_transpose(transpose)) return false;
    for (size_t i = 1; i < op.num_inputs(); ++i) {
      const Value* param = op.input(i);
      if (param != nullptr && (!param->type().shape.is_static() || param->type().shape.num_elements() != 1)) return false;
    }
    const int64_t rank = static_cast<int64_t>(transpose_perm(*transpose).size());
    if (!op.output(0)->type().shape.has_rank() || op.output(0)->type().shape.rank() != rank) return false;
    std::vector<Value*> inputs = op.inputs();
    inputs[0] = transpose->input(0);
    Node* moved = rw.create(op, op.op_type(), inputs, 1, op.attributes(), rw.graph().unique_name(op.name() + "_nhwc"));
    moved->output(0)->set_type(permuted(op.output(0)->type(), to_last_perm(rank)));
    Node* back = add_transpose(rw.graph(), moved->output(0), to_first_perm(rank), op.name() + "_to_nchw", op.device());
    rw.replace(op, back->output(0));
    return true;
  }
};

// The channels-first input transpose of `op` (its input 0), when there is one.
Node* channels_first_input(const Node& op) {
  if (op.num_inputs() == 0 || op.input(0) == nullptr) return nullptr;
  Node* producer = op.input(0)->producer();
  return is_channels_first_transpose(producer) ? producer : nullptr;
}

// Replaces `op` by `channels_last_op` (reading channels-last data, made by
// the caller) followed by a back-Transpose to channels-first.
void finish_sinking(Node& op, Node* channels_last_op, int64_t rank, Rewriter& rw) {
  if (op.device()) channels_last_op->set_device(*op.device());
  channels_last_op->output(0)->set_type(permuted(op.output(0)->type(), to_last_perm(rank)));
  Node* back = add_transpose(rw.graph(), channels_last_op->output(0), to_first_perm(rank), op.name() + "_to_nchw", op.device());
  rw.replace(op, back->output(0));
}

// MaxPool / AveragePool of a back-Transpose -> ChannelsLastPool, when oneDNN
// supports the window (checked on the static shape, batch 1 for a symbolic one).
class SinkTransposeThroughPoolRule final : public RewriteRule {
 public:
  std::string name() const override { return "sink_transpose_through_pool"; }
  std::vector<std::string> root_ops() const override { return {"MaxPool", "AveragePool"}; }
  bool apply(Node& pool, Rewriter& rw) override {
    Node* transpose = channels_first_input(pool);
    if (transpose == nullptr || pool.num_outputs() != 1 || rw.context().registry().find("ChannelsLastPool") == nullptr) return false;
    const TensorType& x = pool.input(0)->type();
    // f32, bf16, and i8/u8 max pools of int8 models (DnnlPool::supports below says which).
    if (x.dtype != DType::kFloat32 && x.dtype != DType::kBFloat16 && x.dtype != DType::kInt8 && x.dtype != DType::kUInt8) {
      return false;
    }
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < x.shape.dims().size(); ++i) {
      const Dim& dim = x.shape[i];
      if (!dim.is_static() && i != 0) return false;
      sizes.push_back(dim.is_static() ? dim.size() : 1);
    }
    bool max = pool.op_type() == "MaxPool";
    bool include_pad = pool.has_attr("count_include_pad") && pool.attr("count_include_pad").i() != 0;
    try {
      if (sizes.empty() || sizes[0] == 0 || !DnnlPool::supports(x.dtype, pool_problem(pool, sizes), max, include_pad)) return false;
    } catch (const Error&) {
      return false;  // attributes the verifier will name
    }
    std::map<std::string, Attribute> attributes = pool.attributes();
    attributes.erase("storage_order");
    attributes["mode"] = Attribute(max ? "max" : "average");
    auto rank = static_cast<int64_t>(sizes.size());
    Node* moved = rw.graph().add_node("ChannelsLastPool", {transpose->input(0)}, 1, attributes,
                                      rw.graph().unique_name(pool.name() + "_nhwc"));
    finish_sinking(pool, moved, rank, rw);
    return true;
  }
};

// GlobalAveragePool / GlobalMaxPool of a back-Transpose -> ReduceMean /
// ReduceMax over the spatial axes of the channels-last data.
class SinkTransposeThroughGlobalPoolRule final : public RewriteRule {
 public:
  std::string name() const override { return "sink_transpose_through_global_pool"; }
  std::vector<std::string> root_ops() const override { return {"GlobalAveragePool", "GlobalMaxPool"}; }
  bool apply(Node& pool, Rewriter& rw) override {
    Node* transpose = channels_first_input(pool);
    if (transpose == nullptr) return false;
    auto rank = static_cast<int64_t>(transpose_perm(*transpose).size());
    std::vector<int64_t> axes;
    for (int64_t i = 1; i + 1 < rank; ++i) axes.push_back(i);
    Node* moved = rw.graph().add_node(pool.op_type() == "GlobalAveragePool" ? "ReduceMean" : "ReduceMax",
                                      {transpose->input(0)}, 1,
                                      {{"axes", Attribute(axes)}, {"keepdims", Attribute(int64_t{1})}},
                                      rw.graph().unique_name(pool.name() + "_nhwc"));
    finish_sinking(pool, moved, rank, rw);
    return true;
  }
};

// Concat of back-Transposes (all of them) -> Concat on the channels-last
// axis that the concatenated axis became.
class SinkTransposeThroughConcatRule final : public RewriteRule {
 public:
  std::string name() const override { return "sink_transpose_through_concat"; }
  std::vector<std::string> root_ops() const override { return {"Concat"}; }
  bool apply(Node& concat, Rewriter& rw) override {
    std::vector<Value*> inputs;
    int64_t rank = 0;
    for (Value* input : concat.inputs()) {
      Node* producer = input != nullptr ? input->producer() : nullptr;
      if (!is_channels_first_transpose(producer)) return false;
      auto r = static_cast<int64_t>(transpose_perm(*producer).size());
      if (rank != 0 && r != rank) return false;
      rank = r;
      inputs.push_back(producer->input(0));
    }
    if (inputs.empty() || !concat.has_attr("axis")) return false;
    int64_t axis = concat.attr("axis").i();
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return false;
    std::vector<int64_t> to_last = to_last_perm(rank);
    int64_t moved_axis = std::find(to_last.begin(), to_last.end(), axis) - to_last.begin();
    Node* moved = rw.graph().add_node("Concat", inputs, 1, {{"axis", Attribute(moved_axis)}},
                                      rw.graph().unique_name(concat.name() + "_nhwc"));
    finish_sinking(concat, moved, rank, rw);
    return true;
  }
};

// The elementwise ops of the registry: the roots the sinking rule starts from.
std::vector<std::string> elementwise_ops(const PassContext& context) {
  std::vector<std::string> ops;
  for (const std::string& name : context.registry().names()) {
    const OpSchema* schema = context.registry().find(name);
    if (schema != nullptr && schema->has(OpTrait::kElementwise)) ops.push_back(name);
  }
  return ops;
}

// An int8 conv (QLinearConv, FusedQLinearConv) with constant weights on
// channels-first data: it becomes a channels-last FusedQLinearConv.
bool int8_convertible(const Node& node) {
  if (!node.domain().empty() || (node.op_type() != "QLinearConv" && node.op_type() != "FusedQLinearConv")) return false;
  if (node.op_type() == "FusedQLinearConv" && conv_layout_is_channels_last(node)) return false;
  if (node.num_inputs() < 8 || node.input(0) == nullptr || node.input(3) == nullptr || !node.input(3)->is_constant()) {
    return false;
  }
  if (!node.control_inputs().empty() || !node.control_outputs().empty()) return false;
  const Shape& x = node.input(0)->type().shape;
  return x.has_rank() && x.rank() >= 3 && x.rank() <= 5 && node.output(0)->type().shape.has_rank();
}

bool convertible(const Node& node) {
  if (!node.domain().empty() || (node.op_type() != "Conv" && node.op_type() != "FusedConv")) return false;
  if (node.op_type() == "FusedConv" && conv_layout_is_channels_last(node)) return false;
  if (node.num_inputs() < 2 || node.input(0) == nullptr || node.input(1) == nullptr || !node.input(1)->is_constant()) return false;
  if (!node.control_inputs().empty() || !node.control_outputs().empty()) return false;
  const TensorType& x = node.input(0)->type();
  DType dtype = x.dtype;
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) return false;
  if (node.num_inputs() > 3 && node.input(3) != nullptr && !(node.input(3)->type().shape == node.output(0)->type().shape)) {
    return false;
  }
  return x.shape.has_rank() && x.shape.rank() >= 3 && x.shape.rank() <= 5 && node.output(0)->type().shape.has_rank();
}

}  // namespace

bool ChannelsLastLayout::run(Graph& graph, PassContext& context) {
  if (context.registry().find("FusedConv") == nullptr) return false;
  bool changed = false;
  Rewriter rw(graph, context);
  for (Node* conv : graph.nodes()) {
    if (!rw.removed(conv) && int8_convertible(*conv) && context.registry().find("FusedQLinearConv") != nullptr) {
      int64_t rank = conv->input(0)->type().shape.rank();
      std::map<std::string, Attribute> attributes = conv->attributes();
      attributes["layout"] = Attribute("NHWC");
      if (!attributes.count("activation")) attributes["activation"] = Attribute("None");
      std::vector<Value*> inputs = conv->inputs();
      inputs[0] = to_channels_last(graph, conv->input(0), rank, conv->device());
      if (inputs.size() > 9 && inputs[9] != nullptr) inputs[9] = to_channels_last(graph, inputs[9], rank, conv->device());  // the addend
      Node* fused = rw.create(*conv, "FusedQLinearConv", inputs, 1, attributes, graph.unique_name(conv->name() + "_nhwc"));
      fused->output(0)->set_type(permuted(conv->output(0)->type(), to_last_perm(rank)));
      Node* back = add_transpose(graph, fused->output(0), to_first_perm(rank), conv->name() + "_to_nchw", conv->device());
      rw.replace(*conv, back->output(0));
      changed = true;
      continue;
    }
    if (rw.removed(conv) || !convertible(*conv)) continue;
    Value* x = conv->input(0);
    Value* y = conv->output(0);
    int64_t rank = x->type().shape.rank();
    std::map<std::string, Attribute> attributes = conv->attributes();
    attributes["layout"] = Attribute("NHWC");
    if (!attributes.count("activation")) attributes["activation"] = Attribute("None");
    std::vector<Value*> inputs = conv->inputs();
    inputs[0] = to_channels_last(graph, x, rank, conv->device());
    if (inputs.size() > 3 && inputs[3] != nullptr) inputs[3] = to_channels_last(graph, inputs[3], rank, conv->device());  // the addend
    Node* fused = rw.create(*conv, "FusedConv", inputs, 1, attributes, graph.unique_name(conv->name() + "_nhwc"));
    fused->output(0)->set_type(permuted(y->type(), to_last_perm(rank)));
    Node* back = add_transpose(graph, fused->output(0), to_first_perm(rank), conv->name() + "_to_nchw", conv->device());
    rw.replace(*conv, back->output(0));
    changed = true;
  }
  if (!changed) return false;
  RewriteDriver sink("channels_last_sinking",
                     [&] {
                       std::vector<std::unique_ptr<RewriteRule>> rules;
                       rules.push_back(std::make_unique<TransposePairRule>());
                       rules.push_back(std::make_unique<SinkTransposeRule>(elementwise_ops(context)));
                       rules.push_back(std::make_unique<SinkTransposeThroughPoolRule>());
                       rules.push_back(std::make_unique<SinkTransposeThroughGlobalPoolRule>());
                       rules.push_back(std::make_unique<SinkTransposeThroughConcatRule>());
                       rules.push_back(std::make_unique<SinkTransposeThroughQuantizationRule>());
                       return rules;
                     }(),
                     /*max_sweeps=*/64);
  sink.run(graph, context);
  return true;
}

}  // namespace weir
