#include "tools/graph-runner/model_loading.h"

#include "core/error.h"
#include "core/model_io.h"
#include "frontend/onnx/onnx_importer.h"
#include "runtime/plan_file.h"

namespace weir::tools {

std::shared_ptr<const Plan> load_runnable(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorKind::kIo, "no such model file").with_file(path.string());
  }
  const std::string ext = path.extension().string();
  if (ext == ".weirplan") return load_plan(path);
  Model model = ext == ".onnx" ? import_onnx_model(path.string()) : load_model(path);
  try {
    return compile(*model.graph);
  } catch (Error& e) {
    throw e.with_file(path.string());
  }
}

}  // namespace weir::tools
