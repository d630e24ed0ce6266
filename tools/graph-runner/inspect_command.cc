#include "tools/graph-runner/inspect_command.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/atomic_file.h"
#include "core/collective_group.h"
#include "core/type_inference.h"
#include "passes/analysis/flop_estimate.h"
#include "runtime/plan.h"
#include "tools/graph-runner/model_loading.h"

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

// Elements of a shape with symbolic dims counted as 1 (per example).
int64_t elements(const Shape& shape) {
  if (!shape.has_rank()) return 0;
  int64_t n = 1;
  for (const Dim& d : shape.dims()) n *= d.is_static() ? d.size() : 1;
  return n;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string graphviz(const Graph& graph) {
  std::ostringstream dot;
  dot << "digraph \"" << escape(graph.name()) << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const Value* input : graph.inputs()) {
    dot << "  \"v:" << escape(input->name()) << "\" [shape=ellipse, label=\"" << escape(input->name()) << "\\n"
        << escape(input->type().to_string()) << "\"];\n";
  }
  for (const Node* node : graph.nodes()) {
    dot << "  \"n:" << escape(node->name()) << "\" [label=\"" << escape(node->op_type()) << "\\n" << escape(node->name())
        << "\"];\n";
    for (const Value* input : node->inputs()) {
      if (input == nullptr) continue;
      if (input->producer() != nullptr) {
        dot << "  \"n:" << escape(input->producer()->name()) << "\" -> \"n:" << escape(node->name()) << "\" [label=\""
            << escape(input->type().to_string()) << "\"];\n";
      } else if (input->kind() == ValueKind::kInput) {
        dot << "  \"v:" << escape(input->name()) << "\" -> \"n:" << escape(node->name()) << "\";\n";
      }
    }
    for (const Node* control : node->control_inputs()) {
      dot << "  \"n:" << escape(control->name()) << "\" -> \"n:" << escape(node->name()) << "\" [style=dashed];\n";
    }
  }
  for (const Value* output : graph.outputs()) {
    dot << "  \"out:" << escape(output->name()) << "\" [shape=ellipse, label=\"" << escape(output->name()) << "\\n"
        << escape(output->type().to_string()) << "\"];\n";
    if (output->producer() != nullptr) {
      dot << "  \"n:" << escape(output->producer()->name()) << "\" -> \"out:" << escape(output->name()) << "\";\n";
    }
  }
  dot << "}\n";
  return dot.str();
}

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
  const Graph& graph = plan->graph();
  std::printf("model: %s (graph '%s', %zu nodes)\n", args.model.c_str(), graph.name().c_str(), graph.num_nodes());
  for (const Value* v : graph.inputs()) std::printf("input  %s: %s\n", v->name().c_str(), v->type().to_string().c_str());
  for (const Value* v : graph.outputs()) std::printf("output %s: %s\n", v->name().c_str(), v->type().to_string().c_str());

  std::map<std::string, int> histogram;
  int64_t flops = 0;
  for (const Node* node : graph.nodes()) {
    ++histogram[node->op_type()];
    flops += estimated_flops(*node);
  }
  std::vector<std::pair<int, std::string>> ops;
  for (const auto& [op, count] : histogram) ops.emplace_back(count, op);
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::printf("ops (opt-level %d):", args.passes.opt_level);
  for (const auto& [count, op] : ops) std::printf(" %s=%d", op.c_str(), count);
  std::printf("\n");
  print_collectives(graph, op_set->ops);

  int64_t parameters = 0, parameter_bytes = 0, constants = 0, constant_bytes = 0;
  for (const Value* v : graph.persistents()) {
    parameters += elements(v->shape());
    parameter_bytes += elements(v->shape()) * static_cast<int64_t>(dtype_size(v->dtype()));
  }
  for (const Value* v : graph.constants()) {
    constants += v->data().num_elements();
    constant_bytes += static_cast<int64_t>(v->data().nbytes());
  }
  // At opt-level 2 and up, parameters are frozen into constants.
  std::printf("parameters: %lld elements, %lld bytes (persistent values)\n", static_cast<long long>(parameters),
              static_cast<long long>(parameter_bytes));
  std::printf("constants: %lld elements, %lld bytes\n", static_cast<long long>(constants),
              static_cast<long long>(constant_bytes));
  bool symbolic = false;
  for (const Value* v : graph.inputs()) {
    for (const Dim& d : v->shape().dims()) symbolic = symbolic || !d.is_static();
  }
  std::printf("estimated_flops: %lld%s\n", static_cast<long long>(flops), symbolic ? " (symbolic dims counted as 1)" : "");
  // Symbolic input dims are bound to --batch for the memory plan: planning
  // needs static shapes.
  std::shared_ptr<const Plan> planned = plan;
  if (symbolic) {
    std::unique_ptr<Graph> bound = graph.clone();
    for (Value* input : bound->inputs()) {
      std::vector<Dim> dims;
      for (const Dim& d : input->shape().dims()) dims.push_back(d.is_static() ? d : Dim(args.batch));
      input->set_type({input->dtype(), Shape(dims)});
    }
    infer_graph_types(*bound, op_set->ops);
    CompileOptions options;
    options.ops = &op_set->ops;
    options.kernels = &op_set->kernels;
    planned = compile(*bound, options);
  }
  std::printf("planned_peak_memory_bytes: %lld (%s; %lld without reuse)\n",
              static_cast<long long>(planned->memory().planned_bytes()),
              symbolic ? ("symbolic dims bound to " + std::to_string(args.batch)).c_str() : "intermediates",
              static_cast<long long>(planned->memory().total_value_bytes));
  if (args.verbose) std::printf("%s", planned->to_string().c_str());
  if (!args.dot.empty()) {
    write_file_atomically(args.dot, graphviz(graph));
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
