#include "tools/graph-runner/optimize_command.h"

#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "core/model_io.h"
#include "passes/pass_manager.h"
#include "tools/graph-runner/model_loading.h"
#include "tools/graph-runner/model_optimization.h"

namespace weir::tools {

namespace {

struct OptimizeArgs {
  std::string model;
  std::vector<std::string> plugins;
  ModelOptions passes;
  std::string output;
  std::vector<std::string> print_after;
  bool list = false;
  bool no_pack = false;
};

void optimize(const OptimizeArgs& args) {
  if (args.list) {
    for (const std::string& name : pass_names()) std::printf("%s\n", name.c_str());
    return;
  }
  if (args.model.empty() || args.output.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "optimize needs MODEL and -o OUT (or --list-passes)");
  }
  std::unique_ptr<OpSet> ops = make_op_set(args.plugins);
  for (const std::string& name : args.print_after) require_pass_name(name);  // an unknown name is an error before running
  const OptimizedModel result =
      optimize_model(args.model, args.output, *ops, args.passes, [&](const Pass& pass, const Graph& g, bool changed) {
        std::fprintf(stderr, "pass %-34s %s, %zu nodes\n", pass.name().c_str(),
                     changed ? "changed the graph" : "no change", g.num_nodes());
        for (const std::string& name : args.print_after) {
          if (name != pass.name()) continue;
          Model shown;
          shown.graph = g.clone();
          std::printf("# graph after %s\n%s", name.c_str(), model_to_text(shown).c_str());
        }
      },
      !args.no_pack);
  std::printf("optimized: %zu nodes -> %zu, written to %s\n", result.nodes_before, result.nodes_after,
              args.output.c_str());
  if (result.packing && result.packing->skipped.empty()) {
    std::printf("packed weights: %zu kernels, %.1f MB, for %s\n", result.packing->kernels,
                static_cast<double>(result.packing->bytes) / 1e6, packed_constant_target().c_str());
  } else if (result.packing) {
    std::printf("weights not packed: %s (the first run packs them)\n", result.packing->skipped.c_str());
  }
}

}  // namespace

void add_optimize_command(CLI::App& app) {
  auto args = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = app.add_subcommand("optimize", "Run the pass pipeline; write .weir/.weirtxt or a compiled .weirplan");
  cmd->add_option("model", args->model, "the model file (.weir, .weirtxt or .onnx)");
  cmd->add_option("-o,--output", args->output, "where the optimized model goes; .weirplan compiles it");
  add_model_options(*cmd, args->plugins, args->passes);
  cmd->add_option("--print-after", args->print_after, "print the graph (text form) after this pass (repeatable)");
  cmd->add_flag("--list-passes", args->list, "list the passes and exit");
  cmd->add_flag("--no-pack-weights", args->no_pack,
                "a .weirplan keeps its weights only in plain layouts (by default they are also stored packed for "
                "this machine's kernels, so a loaded plan's first run need not pack them)");
  cmd->callback([args] { optimize(*args); });
}

}  // namespace weir::tools
