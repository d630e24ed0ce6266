// The feeds graph-runner gives a model: `-i NAME=FILE` files (.npy, or .pb
// for a serialized ONNX TensorProto), and seeded random values for the rest
// when asked.
//
//   std::map<std::string, weir::Tensor> feeds =
//       weir::tools::model_inputs(plan->graph(), "model.weir", {"x=img.npy"}, true);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"

namespace weir::tools {

// Throws weir::Error naming the spec, the input, or the file when a spec is
// malformed, names no input, or an input is left without a value or has a
// declared shape too large to make random values for; errors about the
// model's own inputs name `model_file`, errors about -i files those files.
std::map<std::string, Tensor> model_inputs(const Graph& graph, const std::string& model_file,
                                           const std::vector<std::string>& specs, bool random_rest);

}  // namespace weir::tools
