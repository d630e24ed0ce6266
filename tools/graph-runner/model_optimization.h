// Runs the inference pass pipeline over a model file and writes the result:
// .weir / .weirtxt (the optimized graph) or .weirplan (compiled). What
// `graph-runner optimize` and weir.optimize() in Python do.
//
//   weir::tools::OptimizedModel r = weir::tools::optimize_model("resnet18.onnx", "resnet18.weirplan", *ops, {.opt_level = 3});
//   r.nodes_before;  r.nodes_after;
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "core/graph.h"
#include "passes/pass.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::tools {

struct OptimizedModel {
  size_t nodes_before = 0;
  size_t nodes_after = 0;
};

// `after_pass` (optional) sees the graph after every pass. The output is
// written atomically (temp file, then rename); errors name the model file.
OptimizedModel optimize_model(const std::string& model, const std::string& output, const OpSet& ops,
                              const ModelOptions& model_options,
                              const std::function<void(const Pass&, const Graph&, bool changed)>& after_pass = {});

}  // namespace weir::tools
