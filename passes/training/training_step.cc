#include "passes/training/training_step.h"

#include "core/error.h"
#include "core/type_inference.h"

namespace weir {

Node* add_training_node(Graph& graph, const OpRegistry& registry, const std::string& op_type,
                        const std::vector<Value*>& inputs, size_t outputs, std::map<std::string, Attribute> attributes,
                        const std::string& name, const std::optional<Device>& device) {
  Node* node = graph.add_node(op_type, inputs, outputs, std::move(attributes), graph.unique_name(name));
  node->set_device(device);
  infer_node_types(*node, registry);
  return node;
}

void make_first_output(Graph& graph, Value* value) {
  if (!graph.outputs().empty() && graph.outputs().front() == value) return;
  std::vector<Value*> outputs = graph.outputs();
  graph.clear_outputs();
  graph.add_output(value);
  for (Value* out : outputs) {
    if (out != value) graph.add_output(out);
  }
}

// Every node that reads `value`, directly or through views of it.
void collect_readers(const Value* value, const OpRegistry& registry, std::unordered_set<Node*>& readers) {
  for (const Use& use : value->uses()) {
    if (!readers.insert(use.node).second) continue;
    const OpSchema* schema = registry.find(use.node->op_type(), use.node->domain());
    if (schema != nullptr && has_trait(schema->traits(), OpTrait::kViewOfInput) && use.input_index == 0 &&
        use.node->num_outputs() > 0 && use.node->output(0) != nullptr) {
      collect_readers(use.node->output(0), registry, readers);
    }
  }
}

Value* step_number_input(Graph& graph, TrainingGraph& result, const std::string& pass) {
  Value* step = graph.find_value("step");
  if (step == nullptr) step = graph.add_input("step", {DType::kInt64, Shape{}});
  if (step->kind() != ValueKind::kInput || step->dtype() != DType::kInt64) {
    throw Error(ErrorKind::kInvalidArgument, pass + ": the graph's 'step' must be the i64 step-number input");
  }
  result.step_input = step->name();
  return step;
}

}  // namespace weir
