// `graph-runner bench MODEL [-i NAME=FILE.npy]... [--warmup N] [--iterations N]`:
// runs a model repeatedly and prints latency percentiles and throughput.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_bench_command(CLI::App& app);

}  // namespace weir::tools
