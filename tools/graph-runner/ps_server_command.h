// `graph-runner ps-server [--port P] [--host H] [--wait-limit S]`: runs one
// parameter server (distributed/ps/parameter_server.h) until a worker asks
// the servers to stop or the process gets SIGINT/SIGTERM. It prints
//   ps-server listening on HOST:PORT
// on stdout once it answers (with --port 0, the port the kernel chose).
#pragma once

#include <CLI/CLI.hpp>

namespace weir::tools {

void add_ps_server_command(CLI::App& app);

}  // namespace weir::tools
