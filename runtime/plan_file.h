// The compiled plan file (format: core/fbs/plan.fbs): a Plan saved with its
// placement, schedule, memory plan and weights, loaded by mapping the file.
//
//   weir::save_plan(*plan, "model.weirplan");          // atomic: temp file, then rename
//   std::shared_ptr<const weir::Plan> loaded = weir::load_plan("model.weirplan");
//   weir::Session session(loaded);                    // same outputs, bit for bit
//
// Loading checks the header, runs the flatbuffers verifier over the table
// and checks every index, offset and size against the file before touching
// it; a truncated or corrupted file is a weir::Error(kFormat) naming the
// file, never a crash. Constants are views of the mapped file (64-byte
// aligned, zero-copy), kept mapped as long as any tensor uses them. Kernels
// are instantiated again; nothing is re-planned.
#pragma once

#include <filesystem>
#include <memory>

#include "runtime/plan.h"

namespace weir {

inline constexpr int kPlanFormatVersion = 1;

void save_plan(const Plan& plan, const std::filesystem::path& path);

struct LoadPlanOptions {
  const OpRegistry* ops = nullptr;          // nullptr: default_op_registry()
  const KernelRegistry* kernels = nullptr;  // nullptr: default_kernel_registry()
};
std::shared_ptr<const Plan> load_plan(const std::filesystem::path& path, const LoadPlanOptions& options = {});

}  // namespace weir
