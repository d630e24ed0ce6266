#include "passes/fusion/attention_fusion.h"

#include "passes/graph_match.h"

namespace weir {

namespace {

// The [B, S, H*D] value `v` came from, when `v` is [B, S, H*D] reshaped to
// [B, S, H, D] and transposed (by one or more Transposes, each read once) so
// that its axes are the source's in `order`. Sets heads and dim.
Value* split_heads_source(Value* v, const std::vector<int64_t>& order, int64_t& heads, int64_t& dim) {
  std::vector<int64_t> map = {0, 1, 2, 3};  // v's axis i is current's axis map[i]
  Value* current = v;
  while (current->producer() != nullptr && current->producer()->op_type() == "Transpose" && current->producer()->domain().empty()) {
    const Node* t = current->producer();
    std::vector<int64_t> perm = transpose_perm(*t);
    if (perm.size() != 4 || current->uses().size() != 1) return nullptr;
    for (int64_t& axis : map) axis = perm[static_cast<size_t>(axis)];
    current = t->input(0);
  }
  if (map != order || current->uses().size() != 1) return nullptr;
  const Node* reshape = current->producer();
  if (reshape == nullptr || reshape->op_type() != "Reshape" || !reshape->domain().empty()) return nullptr;
  Value* source = reshape->input(0);
  const Shape& split = current->type().shape;
  const Shape& packed = source->type().shape;
  if (!split.has_rank() || split.rank() != 4 || !packed.has_rank() || packed.rank() != 3) return nullptr;
  if (!split[2].is_static() || !split[3].is_static() || !packed[2].is_static()) return nullptr;
  if (!(split[0] == packed[0]) || !(split[1] == packed[1]) || split[2].size() * split[3].size() != packed[2].size()) return nullptr;
  heads = split[2].size();
  dim = split[3].size();
  return source;
}

class AttentionRule final : public RewriteRule {
 public:
  std::string name() const override { return "attention"; }
  std::vector<std::string> root_ops() const override { return {"Softmax"}; }

  bool apply(Node& softmax, Rewriter& rw) override {
    if (rw.context().registry().find("Attention") == nullptr) return false;
    Value* p = softmax.output(0);
    const Shape& ps = p->type().shape;
    int64_t axis = softmax.has_attr("axis") ? softmax.attr("axis").i() : -1;
    if (!ps.has_rank() || ps.rank() != 4 || (axis != -1 && axis != 3) || p->uses().size() != 1) return false;
    DType dtype = p->dtype();
    if (dtype != DType::kFloat32 && dtype != DType::kBFloat16 && dtype != DType::kFloat64) return false;
    // Backwards from the softmax: [+ mask], [* scale or / c], MatMul(Q, K^T).
    Value* scores = softmax.input(0);
    Value* mask = nullptr;
    if (Node* add = rw.producer_of(scores, "Add"); add != nullptr && scores->uses().size() == 1) {
      for (int side = 0; side < 2 && mask == nullptr; ++side) {
        Value* a = add->input(static_cast<size_t>(side));
        Value* m = add->input(static_cast<size_t>(1 - side));
        Node* producer = a->producer();
        if (producer != nullptr && (producer->op_type() == "MatMul" || producer->op_type() == "Mul" || producer->op_type() == "Div") &&
            m->type().shape.has_rank() && m->type().shape.rank() <= 4 && m->dtype() == dtype) {
          mask = m;
          scores = a;
        }
      }
    }
    double scale = 1.0, c = 0;
    bool scaled = false;
    if (Node* mul = rw.producer_of(scores, "Mul"); mul != nullptr && scores->uses().size() == 1) {
      for (int side = 0; side < 2 && !scaled; ++side) {
        if (scalar_value(mul->input(static_cast<size_t>(1 - side)), c)) {
          scale = c;
          scores = mul->input(static_cast<size_t>(side));
          scaled = true;
        }
      }
    } else if (Node* div = rw.producer_of(scores, "Div"); div != nullptr && scores->uses().size() == 1) {
      if (scalar_value(div->input(1), c) && c != 0) {
        scale = 1.0 / c;
        scores = div->input(0);
        scaled = true;
      }
    }
    Node* qk = rw.producer_of(scores, "MatMul");
    if (qk == nullptr || scores->uses().size() != 1) return false;
    // Forwards: MatMul(P, V), Transpose back, Reshape to [B, S, H*D].
    Node* pv = only_reader(p, "MatMul");
    if (pv == nullptr || pv->input(0) != p) return false;
    Node* back = only_reader(pv->output(0), "Transpose");
    if (back == nullptr || transpose_perm(*back) != std::vector<int64_t>{0, 2, 1, 3}) return false;
    Node* merge = only_reader(back->output(0), "Reshape");
    if (merge == nullptr) return false;
    int64_t hq = 0, dq = 0, hk = 0, dk = 0, hv = 0, dv = 0;
    Value* q = split_heads_source(qk->input(0), {0, 2, 1, 3}, hq, dq);
    Value* k = split_heads_source(qk->input(1), {0, 2, 3, 1}, hk, dk);
    Value* v = split_heads_source(pv->input(1), {0, 2, 1, 3}, hv, dv);
    if (q == nullptr || k == nullptr || v == nullptr || hq != hk || hq != hv || dq != dk || dq != dv) return false;
    const TensorType& out = merge->output(0)->type();
    if (!(q->type().shape == k->type().shape) || !(q->type().shape == v->type().shape) || !(out.shape == q->type().shape) ||
        q->dtype() != dtype || out.dtype != dtype) {
      return false;
    }
    std::map<std::string, Attribute> attributes = {{"num_heads", Attribute(hq)}, {"scale", Attribute(scale)}};
    std::vector<Value*> inputs = {q, k, v};
    if (mask != nullptr) inputs.push_back(mask);
    Node* attention = rw.create(softmax, "Attention", inputs, 1, attributes, rw.graph().unique_name(softmax.name() + "_attention"));
    attention->output(0)->set_type(out);
    rw.replace(*merge, attention->output(0));  // the whole pattern becomes unread and goes with it
    return true;
  }
};

}  // namespace

AttentionFusion::AttentionFusion() : RewriteDriver("attention_fusion", make_rules<AttentionRule>()) {}

}  // namespace weir
