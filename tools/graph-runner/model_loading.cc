#include "tools/graph-runner/model_loading.h"

#include "core/error.h"
#include "core/model_io.h"
#include "frontend/onnx/onnx_importer.h"
#include "core/type_inference.h"
#include "ops/register_ops.h"
#include "passes/pass_manager.h"
#include "passes/precision/auto_mixed_precision.h"
#include "runtime/device_support.h"
#include "runtime/plan_file.h"

namespace weir::tools {

std::unique_ptr<OpSet> make_op_set(const std::vector<std::string>& plugins) {
  auto set = std::make_unique<OpSet>();
  register_all_ops(set->ops);
  register_all_kernels(set->kernels);
  for (const std::string& plugin : plugins) set->plugins.push_back(load_plugin(plugin, set->ops, set->kernels));
  return set;
}

std::unique_ptr<Graph> load_graph(const std::filesystem::path& path, const OpSet& ops) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorKind::kIo, "no such model file").with_file(path.string());
  }
  const std::string ext = path.extension().string();
  if (ext == ".weirplan") {
    throw Error(ErrorKind::kInvalidArgument, "a compiled plan has no graph to rewrite; give the .weir or .onnx model")
        .with_file(path.string());
  }
  Model model = ext == ".onnx" ? import_onnx_model(path.string(), {.registry = &ops.ops}) : load_model(path);
  return std::move(model.graph);
}

std::shared_ptr<const Plan> load_runnable(const std::filesystem::path& path, const OpSet& ops, const ModelOptions& model_options) {
  // A compiled plan was optimized when it was made.
  if (path.extension() == ".weirplan") return load_plan(path, {.ops = &ops.ops, .kernels = &ops.kernels});
  std::unique_ptr<Graph> graph = load_graph(path, ops);
  try {
    CompileOptions options;
    options.opt_level = model_options.opt_level;
    options.disabled_passes = {model_options.disabled.begin(), model_options.disabled.end()};
    options.ops = &ops.ops;
    options.kernels = &ops.kernels;
    options.default_device = Device::parse(model_options.device);
    options.amp = amp_precision(model_options);
    options.host_fallback = model_options.host_fallback;
    try {
      check_device_usable(options.default_device);  // before compiling kernels for a device that is not there
    } catch (const Error& e) {
      throw Error(e.kind(), "--device " + e.message());  // "--device cuda:0: no CUDA device (...)"
    }
    return compile(std::move(graph), options);
  } catch (Error& e) {
    throw e.with_file(path.string());
  }
}

std::optional<DType> amp_precision(const ModelOptions& model_options) {
  if (model_options.amp.empty() || model_options.amp == "off") return std::nullopt;
  try {
    return parse_amp_dtype(model_options.amp);
  } catch (const Error& e) {
    throw Error(e.kind(), "--amp: " + e.message());
  }
}

void add_model_options(CLI::App& cmd, std::vector<std::string>& plugins, ModelOptions& model_options) {
  cmd.add_option("--plugin", plugins, "load custom ops from this plugin library (repeatable)");
  cmd.add_option("--opt-level", model_options.opt_level, "optimization level 0-3 (default 3: every pass)")->check(CLI::Range(0, 3));
  cmd.add_option("--disable-pass", model_options.disabled, "skip this pass (repeatable; see `optimize --list-passes`)");
  cmd.add_option("--device", model_options.device,
                 "where the model runs: cpu, cpu:N, cuda or cuda:N (default cpu; cuda needs a build with CUDA and the GPU)");
  cmd.add_option("--amp", model_options.amp,
                 "mixed precision: off (default), bf16 or fp16: convs and matmuls run in it, norms, softmax and "
                 "reductions in f32, constant weights stored in it");
  cmd.add_flag("!--no-host-fallback", model_options.host_fallback,
               "with --device cuda, refuse a model with an op the GPU has no kernel for (by default such nodes run "
               "on the host, with copies between, and a warning names their ops)");
}

}  // namespace weir::tools
