#include "tools/graph-runner/inspect_command.h"

#include <cstdio>

#include "core/atomic_file.h"
#include "core/collective_group.h"
#include "runtime/plan.h"
#include "tools/graph-runner/graphviz.h"
#include "tools/graph-runner/model_loading.h"
#include "tools/graph-runner/model_summary.h"

namespace weir::tools {

namespace {

struct InspectArgs {
  std::string model;
  std::vector<std::string> plugins;
  ModelOptions passes;
  std::string dot;
  int64_t batch = 1;
  bool verbose = false;
};

// One line per collective, in the order the step runs them: what it
// exchanges, on which stream and among which ranks. A gradient bucket
// (passes/collectives/gradient_buckets.h) also says how many values it packs.
void print_collectives(const Graph& graph, const OpRegistry& registry) {
  for (const Node* node : graph.topological_order()) {
    const OpSchema* schema = registry.find(node->op_type(), node->domain());
    if (schema == nullptr || !schema->has(OpTrait::kCollective)) continue;
    const std::string tag = node->has_attr("tag") && !node->attr("tag").s().empty() ? node->attr("tag").s() : node->name();
    std::printf("collective %s '%s'", node->op_type().c_str(), tag.c_str());
    if (node->num_inputs() > 0 && node->input(0) != nullptr) {
      const Value* input = node->input(0);
      std::printf(": %s", input->type().to_string().c_str());
      if (input->shape().is_static()) {
        std::printf(", %lld bytes", static_cast<long long>(input->shape().num_elements() *
                                                          static_cast<int64_t>(dtype_size(input->dtype()))));
      }
      const Node* pack = input->producer();
      if (tag.starts_with("dp/bucket") && pack != nullptr && pack->op_type() == "Concat") {
        std::printf(", a bucket of %zu values", pack->num_inputs());
      }
    }
    std::printf(", stream %s", node->stream().empty() ? "comm" : node->stream().c_str());
    if (node->has_attr("group") && !node->attr("group").ints().empty()) {
      std::string ranks;
      for (int64_t r : node->attr("group").ints()) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      const int64_t size = collective_group_size(*node);
      std::printf(", group [%s]", ranks.c_str());
      if (size < static_cast<int64_t>(node->attr("group").ints().size())) std::printf(" in groups of %lld", static_cast<long long>(size));
    }
    std::printf("\n");
  }
}

void inspect(const InspectArgs& args) {
  std::unique_ptr<OpSet> op_set = make_op_set(args.plugins);
  std::shared_ptr<const Plan> plan = load_runnable(args.model, *op_set, args.passes);
  const ModelSummary s = summarize_model(plan, *op_set, args.batch);
  std::printf("model: %s (graph '%s', %zu nodes)\n", args.model.c_str(), s.graph_name.c_str(), s.nodes);
  for (const auto& [name, type] : s.inputs) std::printf("input  %s: %s\n", name.c_str(), type.c_str());
  for (const auto& [name, type] : s.outputs) std::printf("output %s: %s\n", name.c_str(), type.c_str());
  std::printf("ops (opt-level %d):", args.passes.opt_level);
  for (const auto& [op, count] : s.ops) std::printf(" %s=%d", op.c_str(), count);
  std::printf("\n");
  print_collectives(plan->graph(), op_set->ops);
  std::printf("parameters: %lld elements, %lld bytes (persistent values)\n", static_cast<long long>(s.parameters),
              static_cast<long long>(s.parameter_bytes));
  std::printf("constants: %lld elements, %lld bytes\n", static_cast<long long>(s.constants),
              static_cast<long long>(s.constant_bytes));
  std::printf("estimated_flops: %lld%s\n", static_cast<long long>(s.flops),
              s.symbolic ? " (symbolic dims counted as 1)" : "");
  std::printf("planned_peak_memory_bytes: %lld (%s; %lld without reuse)\n", static_cast<long long>(s.planned_peak_bytes),
              s.symbolic ? ("symbolic dims bound to " + std::to_string(args.batch)).c_str() : "intermediates",
              static_cast<long long>(s.total_value_bytes));
  if (args.verbose) std::printf("%s", s.planned->to_string().c_str());
  if (!args.dot.empty()) {
    write_file_atomically(args.dot, graphviz(plan->graph(), op_set->ops));
    std::printf("graphviz: %s\n", args.dot.c_str());
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Print a model's inputs, outputs, ops, weights, FLOPs and planned memory");
  cmd->add_option("model", args->model, "the model file (.weir, .weirtxt, .weirplan or .onnx)")->required();
  add_model_options(*cmd, args->plugins, args->passes);
  cmd->add_option("--dot", args->dot, "also write the graph as Graphviz to this file");
  cmd->add_option("--batch", args->batch, "bind symbolic dims to this size for the memory plan (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--verbose", args->verbose, "also print the plan: steps, streams, dependencies, memory");
  cmd->callback([args] { inspect(*args); });
}

}  // namespace weir::tools
