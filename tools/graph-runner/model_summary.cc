#include "tools/graph-runner/model_summary.h"

#include <algorithm>
#include <map>

#include "core/type_inference.h"
#include "passes/analysis/flop_estimate.h"

namespace weir::tools {

ModelSummary summarize_model(std::shared_ptr<const Plan> plan, const OpSet& ops, int64_t batch) {
  const Graph& graph = plan->graph();
  ModelSummary s;
  s.graph_name = graph.name();
  s.nodes = graph.num_nodes();
  s.batch = batch;
  for (const Value* v : graph.inputs()) s.inputs.emplace_back(v->name(), v->type().to_string());
  for (const Value* v : graph.outputs()) s.outputs.emplace_back(v->name(), v->type().to_string());

  std::map<std::string, int> histogram;
  for (const Node* node : graph.nodes()) {
    ++histogram[node->op_type()];
    s.flops += estimated_flops(*node);
  }
  for (const auto& [op, count] : histogram) s.ops.emplace_back(op, count);
  std::sort(s.ops.begin(), s.ops.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });

  for (const Value* v : graph.persistents()) {
    s.parameters += per_example_elements(v->shape());
    s.parameter_bytes += per_example_elements(v->shape()) * static_cast<int64_t>(dtype_size(v->dtype()));
  }
  for (const Value* v : graph.constants()) {
    s.constants += v->data().num_elements();
    s.constant_bytes += static_cast<int64_t>(v->data().nbytes());
  }
  for (const Value* v : graph.inputs()) {
    for (const Dim& d : v->shape().dims()) s.symbolic = s.symbolic || !d.is_static();
  }
  s.planned = plan;
  if (s.symbolic) {
    std::unique_ptr<Graph> bound = graph.clone();
    for (Value* input : bound->inputs()) {
      std::vector<Dim> dims;
      for (const Dim& d : input->shape().dims()) dims.push_back(d.is_static() ? d : Dim(batch));
      input->set_type({input->dtype(), Shape(dims)});
    }
    infer_graph_types(*bound, ops.ops);
    CompileOptions options;
    options.ops = &ops.ops;
    options.kernels = &ops.kernels;
    s.planned = compile(*bound, options);
  }
  s.planned_peak_bytes = s.planned->memory().planned_bytes();
  s.total_value_bytes = s.planned->memory().total_value_bytes;
  return s;
}

}  // namespace weir::tools
