// How the bindings hold graphs and option lists that several files share.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::python {

// Graphs are shared between Python objects (a builder's result, a training
// step made from it), so they are held by shared_ptr.
using GraphHandle = std::shared_ptr<Graph>;

// Names of values, and (name, type) pairs such as ('x', 'f32[N,784]').
std::vector<std::string> value_names(const std::vector<Value*>& values);
std::vector<std::pair<std::string, std::string>> typed_names(const std::vector<Value*>& values);

// graph-runner's model options; kInvalidArgument for an opt_level outside
// 0-3, and an error naming the choices for an `amp` other than off, bf16 or fp16.
tools::ModelOptions model_options(int opt_level, const std::vector<std::string>& disable_passes,
                                  const std::string& device = "cpu", const std::string& amp = "off");

// The built-in ops and kernels plus each plugin's, shared by the sessions
// made with them (a plugin's kernels must outlive every plan using them).
std::shared_ptr<tools::OpSet> op_set(const std::vector<std::string>& plugins);

}  // namespace weir::python
