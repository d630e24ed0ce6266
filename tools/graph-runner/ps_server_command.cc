#include "tools/graph-runner/ps_server_command.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "distributed/ps/parameter_server.h"

namespace weir::tools {

namespace {

struct PsServerArgs {
  std::string host = "127.0.0.1";
  int port = 0;
  double wait_limit = 300;
};

void run_ps_server(const PsServerArgs& args) {
  // Signals are taken by sigwait below, not by whichever gRPC thread runs:
  // mask them before the server starts its threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ps::ParameterServer server({.host = args.host,
                              .port = args.port,
                              .wait_limit = std::chrono::milliseconds(static_cast<int64_t>(args.wait_limit * 1000))});
  std::printf("ps-server listening on %s\n", server.endpoint().c_str());
  std::fflush(stdout);
  // A worker's stop request ends wait(); the watcher turns it into the
  // signal the main thread waits for.
  std::thread watcher([&server] {
    server.wait();
    ::kill(::getpid(), SIGTERM);
  });
  int signal = 0;
  sigwait(&signals, &signal);
  server.shutdown();
  watcher.join();
  std::printf("ps-server %s stopped\n", server.endpoint().c_str());
}

}  // namespace

void add_ps_server_command(CLI::App& app) {
  auto args = std::make_shared<PsServerArgs>();
  CLI::App* cmd = app.add_subcommand("ps-server", "run a parameter server until the workers stop it (or SIGTERM)");
  cmd->add_option("--host", args->host, "address to listen on (default 127.0.0.1; 0.0.0.0 for other machines)");
  cmd->add_option("--port", args->port, "port to listen on; 0 (default) lets the kernel choose (printed)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--wait-limit", args->wait_limit,
                  "seconds a synchronous pull waits for the other workers' pushes at most (default 300)")
      ->check(CLI::PositiveNumber);
  cmd->callback([args] { run_ps_server(*args); });
}

}  // namespace weir::tools
