// `graph-runner run MODEL [-i NAME=FILE.npy]... [-o DIR] [--random-inputs]`:
// runs a model once and writes each output as DIR/NAME.npy.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_run_command(CLI::App& app);

}  // namespace weir::tools
