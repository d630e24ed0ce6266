// `graph-runner launch -n N [--nnodes K --node-rank R --master-addr A
// --master-port P] -- COMMAND...`: starts N local processes of COMMAND as
// ranks node_rank*N .. node_rank*N+N-1 of a world of K*N, each with
// WEIR_RANK, WEIR_WORLD_SIZE, WEIR_LOCAL_RANK, WEIR_LOCAL_WORLD_SIZE,
// WEIR_MASTER_ADDR and WEIR_MASTER_PORT set (distributed/launch_environment.h
// reads them); prefixes every line they print with "[rank r] "; forwards
// SIGINT and SIGTERM to them; and when one fails, stops the others and
// exits non-zero naming the rank and how it ended.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_launch_command(CLI::App& app);

}  // namespace weir::tools
