// graph-runner: the command-line tool for Weir models. Each subcommand lives
// in its own file; this file wires them up and turns every error into one
// "error: ..." line and a non-zero exit status.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "core/error.h"
#include "tools/graph-runner/bench_command.h"
#include "tools/graph-runner/comm_bench_command.h"
#include "tools/graph-runner/explain_command.h"
#include "tools/graph-runner/inspect_command.h"
#include "tools/graph-runner/launch_command.h"
#include "tools/graph-runner/optimize_command.h"
#include "tools/graph-runner/ps_server_command.h"
#include "tools/graph-runner/quantize_command.h"
#include "tools/graph-runner/run_command.h"
#include "tools/graph-runner/train_command.h"
#include "tools/graph-runner/verify_command.h"

int main(int argc, char** argv) {
  CLI::App app("graph-runner: run and train Weir models", "graph-runner");
  app.require_subcommand(1);
  weir::tools::add_run_command(app);
  weir::tools::add_bench_command(app);
  weir::tools::add_inspect_command(app);
  weir::tools::add_optimize_command(app);
  weir::tools::add_quantize_command(app);
  weir::tools::add_verify_command(app);
  weir::tools::add_train_command(app);
  weir::tools::add_launch_command(app);
  weir::tools::add_comm_bench_command(app);
  weir::tools::add_explain_command(app);
  weir::tools::add_ps_server_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const weir::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
