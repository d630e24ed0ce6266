// Loads any model file graph-runner accepts into a compiled plan: .weir /
// .weirtxt (optimized and compiled here), .weirplan (mmap'ed, already
// compiled) or .onnx (imported, optimized, compiled), with the built-in ops
// plus those of the plugins given. The format is chosen by extension.
//
//   auto ops = weir::tools::make_op_set({"libsilu_gate.so"});
//   std::shared_ptr<const weir::Plan> plan = weir::tools::load_runnable("model.weir", *ops, {.opt_level = 3});
//   weir::Session session(plan);
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/plugin/plugin_loader.h"
#include "runtime/plan.h"

namespace weir::tools {

struct OpSet {
  OpRegistry ops;
  KernelRegistry kernels;
  std::vector<LoadedPlugin> plugins;
};

// The built-in ops and kernels, plus each plugin's; a bad plugin is an error naming it.
std::unique_ptr<OpSet> make_op_set(const std::vector<std::string>& plugins);

// --opt-level, --disable-pass, --device, --amp and --no-host-fallback, shared by the subcommands that run models.
struct ModelOptions {
  int opt_level = 3;
  std::vector<std::string> disabled{};
  std::string device = "cpu";  // --device: where nodes without a placement run
  std::string amp = "off";     // --amp: off, bf16 or fp16 (inference in mixed precision)
  bool host_fallback = true;   // --no-host-fallback clears it (runtime/host_fallback.h)
};

// --amp's precision: nullopt for "off", else bf16/f16; throws naming the choices.
std::optional<DType> amp_precision(const ModelOptions& model_options);

// The model's graph (not compiled): .weir/.weirtxt/.onnx; a .weirplan is refused.
std::unique_ptr<Graph> load_graph(const std::filesystem::path& path, const OpSet& ops);
std::shared_ptr<const Plan> load_runnable(const std::filesystem::path& path, const OpSet& ops, const ModelOptions& model_options);

// Adds --plugin, --opt-level, --disable-pass, --device, --amp and --no-host-fallback to a subcommand.
void add_model_options(CLI::App& cmd, std::vector<std::string>& plugins, ModelOptions& model_options);


}  // namespace weir::tools
