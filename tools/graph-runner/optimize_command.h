// `graph-runner optimize MODEL -o OUT [--print-after PASS]`: runs the pass
// pipeline and writes the result as .weir / .weirtxt or a compiled .weirplan.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_optimize_command(CLI::App& app);

}  // namespace weir::tools
