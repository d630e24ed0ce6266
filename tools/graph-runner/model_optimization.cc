#include "tools/graph-runner/model_optimization.h"

#include <filesystem>

#include "core/error.h"
#include "core/model_io.h"
#include "core/type_inference.h"
#include "passes/pass_manager.h"
#include "runtime/plan.h"
#include "runtime/plan_file.h"

namespace weir::tools {

OptimizedModel optimize_model(const std::string& model, const std::string& output, const OpSet& ops,
                              const ModelOptions& model_options,
                              const std::function<void(const Pass&, const Graph&, bool changed)>& after_pass,
                              bool pack_weights) {
  std::unique_ptr<Graph> graph = load_graph(model, ops);
  infer_graph_types(*graph, ops.ops);
  OptimizedModel result{.nodes_before = graph->num_nodes()};
  auto pipeline = inference_pipeline(model_options.opt_level, {model_options.disabled.begin(), model_options.disabled.end()},
                                     amp_precision(model_options));
  if (after_pass) pipeline->set_after_pass(after_pass);
  PassContext context(ops.ops, &ops.kernels);
  try {
    pipeline->run(*graph, context);
  } catch (Error& e) {
    throw e.with_file(model);
  }
  result.nodes_after = graph->num_nodes();
  const std::filesystem::path out = output;
  if (out.extension() == ".weirplan") {
    CompileOptions options;
    options.ops = &ops.ops;
    options.kernels = &ops.kernels;
    std::shared_ptr<const Plan> plan = compile(std::move(graph), options);
    if (pack_weights) result.packing = weir::pack_weights(plan);
    save_plan(*plan, out);
  } else {
    Model saved;
    saved.graph = std::move(graph);
    save_model(saved, out);
  }
  return result;
}

}  // namespace weir::tools
