#include "ops/graph_evaluator.h"

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"

namespace weir {

std::unordered_map<const Value*, Tensor> evaluate_all_values(const Graph& graph,
                                                             const std::map<std::string, Tensor>& feeds,
                                                             const EvaluateOptions& options) {
  const KernelRegistry& kernels = options.kernels != nullptr ? *options.kernels : default_kernel_registry();
  Allocator& allocator = options.allocator != nullptr ? *options.allocator : cpu_allocator();
  std::unordered_map<const Value*, Tensor> values;

  for (const auto& [name, tensor] : feeds) {
    const Value* value = graph.find_value(name);
    if (value == nullptr || value->kind() != ValueKind::kInput) {
      throw Error(ErrorKind::kInvalidArgument, "graph '" + graph.name() + "' has no input named '" + name + "'");
    }
  }
  for (const Value* input : graph.inputs()) {
    auto fed = feeds.find(input->name());
    if (fed == feeds.end()) {
      throw Error(ErrorKind::kInvalidArgument, "graph input '" + input->name() + "' (" + input->type().to_string() +
                                                   ") was not fed");
    }
    const Tensor& tensor = fed->second;
    if (!types_compatible(input->type(), {tensor.dtype(), tensor.shape()})) {
      throw Error(ErrorKind::kInvalidArgument, "graph input '" + input->name() + "' expects " +
                                                   input->type().to_string() + ", got " + tensor.type_string());
    }
    values[input] = tensor;
  }
  for (const Value* constant : graph.constants()) values[constant] = constant->data();
  for (const Value* persistent : graph.persistents()) {
    if (!persistent->data().defined()) {
      throw Error(ErrorKind::kInvalidArgument, "persistent value '" + persistent->name() + "' has no value to read");
    }
    values[persistent] = persistent->data();
  }

  for (const Node* node : graph.topological_order()) {
    std::vector<Tensor> inputs;
    inputs.reserve(node->num_inputs());
    for (const Value* input : node->inputs()) inputs.push_back(input != nullptr ? values.at(input) : Tensor());
    KernelContext ctx(*node, std::move(inputs), allocator);
    kernels.create(*node, DeviceType::kCpu)->compute(ctx);
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      const Tensor& result = ctx.output(i);
      const Value* output = node->output(i);
      if (!result.defined()) {
        throw Error(ErrorKind::kInternal, "kernel left output " + std::to_string(i) + " unset").with_node(node->name());
      }
      if (!types_compatible(output->type(), {result.dtype(), result.shape()})) {
        throw Error(ErrorKind::kInternal, "kernel produced " + result.type_string() + " for output '" +
                                              output->name() + "', declared " + output->type().to_string())
            .with_node(node->name());
      }
      values[output] = result;
    }
  }
  return values;
}

std::vector<Tensor> evaluate_graph(const Graph& graph, const std::map<std::string, Tensor>& feeds,
                                   const EvaluateOptions& options) {
  std::unordered_map<const Value*, Tensor> values = evaluate_all_values(graph, feeds, options);
  std::vector<Tensor> outputs;
  outputs.reserve(graph.outputs().size());
  for (const Value* output : graph.outputs()) outputs.push_back(values.at(output));
  return outputs;
}

}  // namespace weir
