// `graph-runner inspect MODEL [--dot FILE]`: what a model is — inputs and
// outputs, op histogram, weights, estimated FLOPs, planned memory — and
// optionally its graph as Graphviz.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_inspect_command(CLI::App& app);

}  // namespace weir::tools
