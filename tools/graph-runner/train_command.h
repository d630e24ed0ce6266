// `graph-runner train --model NAME --data DIR|synthetic [...]`: trains a zoo
// model, prints machine-readable result lines and saves the trained
// inference model.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_train_command(CLI::App& app);

}  // namespace weir::tools
