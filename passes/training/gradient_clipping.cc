#include "passes/training/gradient_clipping.h"

#include "core/type_inference.h"
#include "passes/training/training_step.h"

namespace weir {

bool ClipGradients::run(Graph& graph, PassContext& context) {
  TrainingStepState& step = context.options<TrainingStepState>();
  std::vector<Value*> gradients;
  for (const std::string& name : step.gradients) gradients.push_back(graph.find_value(name));
  Node* clip = graph.add_node("ClipByGlobalNorm", gradients, gradients.size() + 1,
                              {{"max_norm", Attribute(options_.max_norm)}}, graph.unique_name("clip_by_global_norm"));
  infer_node_types(*clip, context.registry());
  for (size_t i = 0; i < step.gradients.size(); ++i) step.gradients[i] = clip->output(i)->name();
  return true;
}

}  // namespace weir
