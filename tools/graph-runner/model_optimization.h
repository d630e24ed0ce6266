// Runs the inference pass pipeline over a model file and writes the result:
// .weir / .weirtxt (the optimized graph) or .weirplan (compiled, its
// weights packed for this machine's kernels). What
// `graph-runner optimize` and weir.optimize() in Python do.
//
//   weir::tools::OptimizedModel r = weir::tools::optimize_model("resnet18.onnx", "resnet18.weirplan", *ops, {.opt_level = 3});
//   r.nodes_before;  r.nodes_after;
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "core/graph.h"
#include "passes/pass.h"
#include "runtime/weight_packing.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

struct OptimizedModel {
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  // A .weirplan's packed weights (runtime/weight_packing.h); nullopt for
  // other outputs and when `pack_weights` was off.
  std::optional<WeightPacking> packing = std::nullopt;
};

// `after_pass` (optional) sees the graph after every pass. A .weirplan
// stores its weights packed for this machine unless `pack_weights` is off.
// The output is written atomically (temp file, then rename); errors name
// the model file.
OptimizedModel optimize_model(const std::string& model, const std::string& output, const OpSet& ops,
                              const ModelOptions& model_options,
                              const std::function<void(const Pass&, const Graph&, bool changed)>& after_pass = {},
                              bool pack_weights = true);

}  // namespace weir::tools
