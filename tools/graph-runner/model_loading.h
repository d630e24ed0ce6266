// Loads any model file graph-runner accepts into a compiled plan: .weir /
// .weirtxt (compiled here), .weirplan (mmap'ed, already compiled) or .onnx
// (imported, then compiled), with the built-in ops plus those of the
// plugins given. The format is chosen by extension.
//
//   auto ops = weir::tools::make_op_set({"libsilu_gate.so"});
//   std::shared_ptr<const weir::Plan> plan = weir::tools::load_runnable("model.weir", *ops);
//   weir::Session session(plan);
#pragma once

#include <filesystem>
#include <memory>
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

std::shared_ptr<const Plan> load_runnable(const std::filesystem::path& path, const OpSet& ops);

// The --plugin option every model subcommand shares.
inline const char* kPluginHelp = "load custom ops from this plugin library (repeatable)";

}  // namespace weir::tools
