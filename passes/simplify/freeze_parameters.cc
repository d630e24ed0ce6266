#include "passes/simplify/freeze_parameters.h"

namespace weir {

bool FreezeParameters::run(Graph& graph, PassContext& context) {
  // A graph with any node that has side effects or state touching a
  // persistent value is a training (or stateful) graph: freezing one of its
  // values would hide an update. Leave those values be.
  bool changed = false;
  std::vector<Value*> persistents = graph.persistents();
  for (Value* value : persistents) {
    if (!value->data().defined()) continue;
    bool written = false;
    for (const Use& use : value->uses()) {
      const OpSchema* schema = context.registry().find(use.node->op_type(), use.node->domain());
      if (schema == nullptr || has_trait(schema->traits(), OpTrait::kSideEffects) ||
          has_trait(schema->traits(), OpTrait::kStateful)) {
        written = true;
      }
    }
    if (written) continue;
    // Same name: drop the persistent value, then add the constant.
    std::string name = value->name();
    Tensor data = value->data();
    Value* placeholder = graph.add_constant(graph.unique_name(name + "_freezing"), data);
    graph.replace_all_uses(value, placeholder);
    graph.remove_value(value);
    Value* constant = graph.add_constant(name, data);
    graph.replace_all_uses(placeholder, constant);
    graph.remove_value(placeholder);
    changed = true;
  }
  return changed;
}

}  // namespace weir
