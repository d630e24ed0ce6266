#include "passes/simplify/constant_folding.h"

#include "core/error.h"
#include "ops/kernel.h"

namespace weir {

namespace {

constexpr size_t kMaxFoldedBytes = size_t{64} << 20;

bool foldable(const Node& node, const OpSchema* schema) {
  if (schema == nullptr) return false;
  const OpTrait never = OpTrait::kStateful | OpTrait::kSideEffects | OpTrait::kCollective;
  if (static_cast<uint32_t>(schema->traits()) & static_cast<uint32_t>(never)) return false;
  if (node.num_inputs() == 0 || !node.control_inputs().empty()) return false;
  for (const Value* input : node.inputs()) {
    if (input != nullptr && !input->is_constant()) return false;
  }
  for (const auto& [name, attr] : node.attributes()) {
    if (attr.type() == AttrType::kGraph || attr.type() == AttrType::kGraphs) return false;  // If/Loop bodies
  }
  // Constants are tensors: a sequence or optional result stays computed.
  for (const Value* output : node.outputs()) {
    if (output != nullptr && !output->type().is_tensor()) return false;
  }
  return true;
}

}  // namespace

bool ConstantFolding::run(Graph& graph, PassContext& context) {
  bool changed = false;
  // Topological order: a folded node's constants feed the next candidates.
  for (Node* node : graph.topological_order()) {
    if (!foldable(*node, context.registry().find(node->op_type(), node->domain()))) continue;
    std::vector<Tensor> inputs;
    for (const Value* input : node->inputs()) inputs.push_back(input != nullptr ? input->data() : Tensor());
    std::vector<Tensor> outputs;
    try {
      std::unique_ptr<OpKernel> kernel = context.kernels().create(*node, DeviceType::kCpu);
      KernelContext ctx(*node, inputs, cpu_allocator());
      kernel->compute(ctx);
      outputs = ctx.outputs();
    } catch (const Error&) {
      // No CPU kernel, or the kernel refuses these inputs: the node stays
      // and reports the problem when the graph runs.
      continue;
    }
    size_t bytes = 0;
    for (const Tensor& t : outputs) bytes += t.defined() ? t.nbytes() : 0;
    if (bytes > kMaxFoldedBytes) continue;
    for (size_t o = 0; o < node->num_outputs(); ++o) {
      Value* out = node->output(o);
      if (out == nullptr) continue;
      if (o >= outputs.size() || !outputs[o].defined() || !outputs[o].type().is_tensor()) continue;
      // Outputs that alias an input (views) are copied: constants own their data.
      Value* constant = graph.add_constant(graph.unique_name(out->name() + "_folded"), outputs[o].clone());
      graph.replace_all_uses(out, constant);
    }
    bool all_replaced = true;
    for (Value* out : node->outputs()) all_replaced = all_replaced && (out == nullptr || out->uses().empty());
    if (all_replaced && node->control_outputs().empty()) graph.remove_node(node);
    changed = true;
  }
  return changed;
}

}  // namespace weir
