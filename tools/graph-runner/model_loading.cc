#include "tools/graph-runner/model_loading.h"

#include "core/error.h"
#include "core/model_io.h"
#include "frontend/onnx/onnx_importer.h"
#include "ops/register_ops.h"
#include "runtime/plan_file.h"

namespace weir::tools {

std::unique_ptr<OpSet> make_op_set(const std::vector<std::string>& plugins) {
  auto set = std::make_unique<OpSet>();
  register_all_ops(set->ops);
  register_all_kernels(set->kernels);
  for (const std::string& plugin : plugins) set->plugins.push_back(load_plugin(plugin, set->ops, set->kernels));
  return set;
}

std::shared_ptr<const Plan> load_runnable(const std::filesystem::path& path, const OpSet& ops) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorKind::kIo, "no such model file").with_file(path.string());
  }
  const std::string ext = path.extension().string();
  if (ext == ".weirplan") return load_plan(path, {.ops = &ops.ops, .kernels = &ops.kernels});
  Model model = ext == ".onnx" ? import_onnx_model(path.string(), {.registry = &ops.ops}) : load_model(path);
  try {
    CompileOptions options;
    options.ops = &ops.ops;
    options.kernels = &ops.kernels;
    return compile(*model.graph, options);
  } catch (Error& e) {
    throw e.with_file(path.string());
  }
}

}  // namespace weir::tools
