// Loads any model file graph-runner accepts into a compiled plan: .weir /
// .weirtxt (compiled here), .weirplan (mmap'ed, already compiled) or .onnx
// (imported, then compiled). The format is chosen by extension.
//
//   std::shared_ptr<const weir::Plan> plan = weir::tools::load_runnable("lenet.weir");
//   weir::Session session(plan);
#pragma once

#include <filesystem>
#include <memory>

#include "runtime/plan.h"

namespace weir::tools {

std::shared_ptr<const Plan> load_runnable(const std::filesystem::path& path);

}  // namespace weir::tools
