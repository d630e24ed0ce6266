// Loads a custom op plugin (a shared library implementing the C ABI of
// include/weir/plugin.h) and registers its ops' schemas and kernels, each
// kernel for the device its op description names (CPU by default; an op
// described once per device gets a kernel on each).
//
//   weir::OpRegistry ops;
//   weir::register_all_ops(ops);
//   weir::KernelRegistry kernels;
//   weir::register_all_kernels(kernels);
//   weir::LoadedPlugin plugin = weir::load_plugin("libsilu_gate.so", ops, kernels);
//   weir::CompileOptions options;
//   options.ops = &ops;
//   options.kernels = &kernels;
//   auto plan = weir::compile(graph, options);
//
// A file that is not a shared library, a library without the entry symbol,
// one built against another ABI version, or an op description that breaks
// the ABI's rules is a weir::Error naming the file (and op); nothing is
// registered then. The library stays loaded as long as a schema, kernel or
// the returned handle refers to it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

struct LoadedPlugin {
  std::string name;
  std::vector<std::string> ops;
  std::shared_ptr<void> library;  // the dlopen handle; closed when the last user lets go
};

LoadedPlugin load_plugin(const std::filesystem::path& path, OpRegistry& ops, KernelRegistry& kernels);

}  // namespace weir
