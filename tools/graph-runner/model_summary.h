// What a compiled model is, as figures: what `graph-runner inspect` prints
// and weir.inspect() returns in Python.
//
//   std::shared_ptr<const weir::Plan> plan = weir::tools::load_runnable("model.onnx", *ops, {});
//   weir::tools::ModelSummary s = weir::tools::summarize_model(plan, *ops, /*batch=*/8);
//   s.flops;  s.planned_peak_bytes;
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/plan.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

struct ModelSummary {
  std::string graph_name;
  size_t nodes = 0;
  std::vector<std::pair<std::string, std::string>> inputs, outputs;  // name, type ("f32[N,3,224,224]")
  std::vector<std::pair<std::string, int>> ops;  // op type and count, the most frequent first
  int64_t parameters = 0, parameter_bytes = 0;   // persistent values (symbolic dims as 1)
  int64_t constants = 0, constant_bytes = 0;     // at opt-level 2 and up, parameters are frozen into constants
  int64_t flops = 0;                             // estimated; multiply-adds count 2, symbolic dims as 1
  bool symbolic = false;                         // an input has a symbolic dim
  int64_t batch = 1;                             // what symbolic dims were bound to for the memory plan
  int64_t planned_peak_bytes = 0;                // the memory plan's arena (intermediates)
  int64_t total_value_bytes = 0;                 // the same without buffer reuse
  std::shared_ptr<const Plan> planned;           // the plan the memory figures are of
};

// Symbolic input dims are bound to `batch` for the memory plan (planning
// needs static shapes); the other figures are of `plan` itself.
ModelSummary summarize_model(std::shared_ptr<const Plan> plan, const OpSet& ops, int64_t batch);

}  // namespace weir::tools
