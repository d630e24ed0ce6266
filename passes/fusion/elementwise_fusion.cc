#include "passes/fusion/elementwise_fusion.h"

#include <algorithm>
#include <sstream>

#include "ops/elementwise/fused_elementwise.h"
#include "passes/graph_match.h"

namespace weir {

namespace {

struct Step {
  std::string op;
  std::vector<int> args;  // registers
};

// A node as a program over its own inputs: FusedElementwise's program, or
// one step for a plain op. Empty when the node is not fusable.
std::vector<Step> program_of(const Node& node) {
  if (!node.domain().empty() || node.num_outputs() != 1 || !node.control_inputs().empty() || !node.control_outputs().empty()) {
    return {};
  }
  DType dtype = node.output(0)->dtype();
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) return {};
  for (const Value* input : node.inputs()) {
    if (input == nullptr || input->dtype() != dtype) return {};
  }
  if (node.op_type() == "FusedElementwise") {
    std::vector<Step> steps;
    for (const std::string& line : node.attr("program").strings()) {
      std::istringstream in(line);
      Step step;
      in >> step.op;
      for (int r = 0; in >> r;) step.args.push_back(r);
      steps.push_back(step);
    }
    return steps;
  }
  int arity = fusable_elementwise_arity(node.op_type());
  if (arity == 0 || static_cast<int>(node.num_inputs()) != arity || !node.attributes().empty()) return {};
  Step step{node.op_type(), {}};
  for (int i = 0; i < arity; ++i) step.args.push_back(i);
  return {step};
}

// A value a group may read: of the group's shape, or a single element.
bool fits(const Value* value, const Shape& shape) {
  const Shape& s = value->type().shape;
  if (s == shape) return true;
  return s.has_rank() && s.is_static() && s.num_elements() == 1;
}

class ElementwiseChainRule final : public RewriteRule {
 public:
  std::string name() const override { return "elementwise_chain"; }
  std::vector<std::string> root_ops() const override {
    std::vector<std::string> ops = fusable_elementwise_ops();
    ops.push_back("FusedElementwise");
    return ops;
  }

  bool apply(Node& consumer, Rewriter& rw) override {
    if (rw.context().registry().find("FusedElementwise") == nullptr) return false;
    std::vector<Step> c_steps = program_of(consumer);
    const Shape& shape = consumer.output(0)->type().shape;
    if (c_steps.empty() || !shape.has_rank()) return false;
    for (const Value* input : consumer.inputs()) {
      if (!fits(input, shape)) return false;
    }
    for (Value* v : consumer.inputs()) {
      Node* producer = v->producer();
      if (producer == nullptr || is_graph_output(rw.graph(), v) || !(v->type().shape == shape)) continue;
      if (producer->device() != consumer.device()) continue;
      bool only_consumer = std::all_of(v->uses().begin(), v->uses().end(), [&](const Use& u) { return u.node == &consumer; });
      if (!only_consumer) continue;
      std::vector<Step> p_steps = program_of(*producer);
      if (p_steps.empty()) continue;
      bool inputs_fit = std::all_of(producer->inputs().begin(), producer->inputs().end(), [&](const Value* in) { return fits(in, shape); });
      if (!inputs_fit) continue;
      merge(consumer, *producer, v, c_steps, p_steps, rw);
      return true;
    }
    return false;
  }

 private:
  static void merge(Node& consumer, Node& producer, Value* v, const std::vector<Step>& c_steps,
                    const std::vector<Step>& p_steps, Rewriter& rw) {
    std::vector<Value*> inputs;
    auto input_index = [&](Value* value) {
      auto found = std::find(inputs.begin(), inputs.end(), value);
      if (found != inputs.end()) return static_cast<int>(found - inputs.begin());
      inputs.push_back(value);
      return static_cast<int>(inputs.size()) - 1;
    };
    std::vector<int> p_inputs, c_inputs;
    for (Value* in : producer.inputs()) p_inputs.push_back(input_index(in));
    for (Value* in : consumer.inputs()) c_inputs.push_back(in == v ? -1 : input_index(in));
    const int n = static_cast<int>(inputs.size());
    std::vector<std::string> program;
    auto emit = [&](const Step& step, const auto& map) {
      std::string line = step.op;
      for (int r : step.args) line += " " + std::to_string(map(r));
      program.push_back(line);
    };
    const int p_count = static_cast<int>(p_steps.size());
    const int p_inputs_count = static_cast<int>(producer.num_inputs());
    for (const Step& step : p_steps) {
      emit(step, [&](int r) { return r < p_inputs_count ? p_inputs[static_cast<size_t>(r)] : n + (r - p_inputs_count); });
    }
    const int v_register = n + p_count - 1;
    const int c_inputs_count = static_cast<int>(consumer.num_inputs());
    for (const Step& step : c_steps) {
      emit(step, [&](int r) {
        if (r >= c_inputs_count) return n + p_count + (r - c_inputs_count);
        int mapped = c_inputs[static_cast<size_t>(r)];
        return mapped < 0 ? v_register : mapped;
      });
    }
    Node* fused = rw.create(consumer, "FusedElementwise", inputs, 1, {{"program", Attribute(program)}},
                                      rw.graph().unique_name(consumer.name() + "_fused"));
    fused->output(0)->set_type(consumer.output(0)->type());
    rw.replace(consumer, fused->output(0));
  }
};

}  // namespace

ElementwiseFusion::ElementwiseFusion() : RewriteDriver("elementwise_fusion", make_rules<ElementwiseChainRule>()) {}

}  // namespace weir
