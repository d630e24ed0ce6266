// `graph-runner verify MODEL [--tolerance X]`: runs the graph before and
// after each pass of the pipeline on the same random inputs and reports,
// per pass, the largest difference; names the first pass that breaks the
// tolerance (and exits non-zero).
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_verify_command(CLI::App& app);

}  // namespace weir::tools
