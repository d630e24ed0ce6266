// How the bindings hold graphs and option lists that several files share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "tools/graph-runner/model_loading.h"

namespace weir::python {

// Graphs are shared between Python objects (a builder's result, a training
// step made from it), so they are held by shared_ptr.
using GraphHandle = std::shared_ptr<Graph>;

// The built-in ops and kernels plus each plugin's, shared by the sessions
// made with them (a plugin's kernels must outlive every plan using them).
std::shared_ptr<tools::OpSet> op_set(const std::vector<std::string>& plugins);

}  // namespace weir::python
