#include "ops/graph_evaluator.h"

#include "core/error.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"
#include "ops/subgraph_runner.h"

namespace weir {

std::unordered_map<const Value*, Tensor> evaluate_all_values(const Graph& graph,
                                                             const std::map<std::string, Tensor>& feeds,
                                                             const EvaluateOptions& options) {
  const KernelRegistry& kernels = options.kernels != nullptr ? *options.kernels : default_kernel_registry();
  Allocator& allocator = options.allocator != nullptr ? *options.allocator : cpu_allocator();

  for (const auto& [name, tensor] : feeds) {
    const Value* value = graph.find_value(name);
    if (value == nullptr || value->kind() != ValueKind::kInput) {
      throw Error(ErrorKind::kInvalidArgument, "graph '" + graph.name() + "' has no input named '" + name + "'");
    }
  }
  std::vector<Tensor> inputs;
  for (const Value* input : graph.inputs()) {
    auto fed = feeds.find(input->name());
    if (fed == feeds.end()) {
      throw Error(ErrorKind::kInvalidArgument, "graph input '" + input->name() + "' (" + input->type().to_string() +
                                                   ") was not fed");
    }
    const Tensor& tensor = fed->second;
    if (!types_compatible(input->type(), tensor.type())) {
      throw Error(ErrorKind::kInvalidArgument, "graph input '" + input->name() + "' expects " +
                                                   input->type().to_string() + ", got " + tensor.type_string());
    }
    inputs.push_back(tensor);
  }
  for (const Value* persistent : graph.persistents()) {
    if (!persistent->data().defined()) {
      throw Error(ErrorKind::kInvalidArgument, "persistent value '" + persistent->name() + "' has no value to read");
    }
  }
  // The graph outlives this call: the runner borrows it.
  SubgraphRunner runner(std::shared_ptr<const Graph>(std::shared_ptr<const Graph>(), &graph), kernels);
  return runner.run_all(std::move(inputs), allocator);
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
