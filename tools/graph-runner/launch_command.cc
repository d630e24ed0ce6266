#include "tools/graph-runner/launch_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace weir::tools {

namespace {

struct LaunchArgs {
  int processes = 0;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::vector<std::string> command;
};

// The signal launch received (SIGINT/SIGTERM), to forward; a self-pipe
// wakes the poll loop.
volatile sig_atomic_t received_signal = 0;
int wake_fd = -1;

void on_signal(int signal) {
  received_signal = signal;
  char byte = 1;
  if (::write(wake_fd, &byte, 1) < 0) {
    // Nothing to do in a handler: the loop also polls received_signal.
  }
}

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int output = -1;      // the read end of its stdout+stderr
  std::string partial;  // a line not yet ended
  bool running = true;
  int status = 0;
};

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// Prints the complete lines of `child`'s output so far, prefixed.
void print_lines(Child& child, bool flush) {
  size_t start = 0;
  while (true) {
    size_t end = child.partial.find('\n', start);
    if (end == std::string::npos) break;
    std::printf("[rank %d] %s\n", child.rank, child.partial.substr(start, end - start).c_str());
    start = end + 1;
  }
  child.partial.erase(0, start);
  if (flush && !child.partial.empty()) {
    std::printf("[rank %d] %s\n", child.rank, child.partial.c_str());
    child.partial.clear();
  }
  std::fflush(stdout);
}

pid_t start(const LaunchArgs& args, int local_rank, int& output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorKind::kIo, std::string("launch: cannot make a pipe: ") + std::strerror(errno));
  const int world = args.nnodes * args.processes;
  const int rank = args.node_rank * args.processes + local_rank;
  pid_t pid = ::fork();
  if (pid < 0) throw Error(ErrorKind::kIo, std::string("launch: cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Its own process group, so stopping a rank stops what it started too
    // (a shell's children, a data loader's workers).
    ::setpgid(0, 0);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::setenv("WEIR_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("WEIR_WORLD_SIZE", std::to_string(world).c_str(), 1);
    ::setenv("WEIR_LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
    ::setenv("WEIR_LOCAL_WORLD_SIZE", std::to_string(args.processes).c_str(), 1);
    ::setenv("WEIR_MASTER_ADDR", args.master_addr.c_str(), 1);
    ::setenv("WEIR_MASTER_PORT", std::to_string(args.master_port).c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& word : args.command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "launch: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    std::fflush(stderr);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever of parent and child runs first
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);  // the loop reads whatever is there, never waits on one rank
  output = fds[0];
  return pid;
}

int launch(const LaunchArgs& args) {
  if (args.processes < 1) throw Error(ErrorKind::kInvalidArgument, "launch: -n must be at least 1, got " + std::to_string(args.processes));
  if (args.nnodes < 1 || args.node_rank < 0 || args.node_rank >= args.nnodes) {
    throw Error(ErrorKind::kInvalidArgument, "launch: --node-rank " + std::to_string(args.node_rank) +
                                                 " is not a node of --nnodes " + std::to_string(args.nnodes));
  }
  if (args.master_port < 1 || args.master_port > 65535) {
    throw Error(ErrorKind::kInvalidArgument, "launch: --master-port " + std::to_string(args.master_port) + " is not a TCP port");
  }
  if (args.command.empty()) throw Error(ErrorKind::kInvalidArgument, "launch: no command to run (give it after --)");

  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(ErrorKind::kIo, "launch: cannot make a pipe");
  wake_fd = wake[1];
  struct sigaction action {};
  action.sa_handler = on_signal;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);

  std::vector<Child> children(static_cast<size_t>(args.processes));
  for (int l = 0; l < args.processes; ++l) {
    children[static_cast<size_t>(l)].rank = args.node_rank * args.processes + l;
    children[static_cast<size_t>(l)].pid = start(args, l, children[static_cast<size_t>(l)].output);
  }
  std::string failure;  // the first rank that failed, and how
  int failed_rank = -1;
  bool stopping = false;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  auto terminate_at = std::chrono::steady_clock::time_point::max();
  int forwarded = 0;
  auto stop_all = [&](int signal) {
    for (Child& child : children) {
      if (child.running) ::kill(-child.pid, signal);  // the rank's whole process group
    }
  };
  int running = args.processes;
  while (running > 0) {
    std::vector<pollfd> fds = {{wake[0], POLLIN, 0}};
    for (Child& child : children) {
      if (child.output >= 0) fds.push_back({child.output, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 100);
    char drain[64];
    while (::read(wake[0], drain, sizeof(drain)) > 0) {
    }
    if (received_signal != 0 && forwarded != received_signal) {
      forwarded = received_signal;
      stop_all(received_signal);  // the ranks decide how to stop; the grace period below bounds it
      if (!stopping) {
        stopping = true;
        stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      }
    }
    for (Child& child : children) {
      if (child.output < 0) continue;
      char buffer[65536];
      ssize_t n = ::read(child.output, buffer, sizeof(buffer));
      if (n > 0) {
        child.partial.append(buffer, static_cast<size_t>(n));
        print_lines(child, false);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        print_lines(child, true);
        ::close(child.output);
        child.output = -1;
      }
    }
    // The ranks that ended since the last look. When several failed at
    // once, one killed by a signal is named first: the others most likely
    // exited because they lost it (a collective with a dead peer fails at
    // once), and rank order alone would name them instead.
    Child* first_failed = nullptr;
    for (Child& child : children) {
      if (!child.running) continue;
      if (::waitpid(child.pid, &child.status, WNOHANG) != child.pid) continue;
      child.running = false;
      --running;
      ::kill(-child.pid, SIGKILL);  // whatever it left behind in its group
      const bool failed = WIFSIGNALED(child.status) || WEXITSTATUS(child.status) != 0;
      if (failed && (first_failed == nullptr || (WIFSIGNALED(child.status) && !WIFSIGNALED(first_failed->status)))) {
        first_failed = &child;
      }
    }
    if (first_failed != nullptr) {
      const Child& child = *first_failed;
      if (failure.empty() && !stopping) {
        failure = "rank " + std::to_string(child.rank) + " " + how_it_ended(child.status);
        failed_rank = child.rank;
        std::fprintf(stderr, "launch: %s; stopping the other ranks\n", failure.c_str());
        stopping = true;
        // The others first get a moment to notice (a collective with the
        // failed rank fails at once) and say so themselves; then SIGTERM,
        // then SIGKILL past the grace period.
        terminate_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        stop_deadline = terminate_at + std::chrono::seconds(10);
      }
    }
    if (std::chrono::steady_clock::now() > terminate_at) {
      stop_all(SIGTERM);
      terminate_at = std::chrono::steady_clock::time_point::max();
    }
    if (stopping && std::chrono::steady_clock::now() > stop_deadline) {
      stop_all(SIGKILL);  // past the grace period
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
  }
  // What the ranks printed last: the pipes hold it after they exited.
  for (Child& child : children) {
    if (child.output < 0) continue;
    char buffer[65536];
    ssize_t n;
    while ((n = ::read(child.output, buffer, sizeof(buffer))) > 0) child.partial.append(buffer, static_cast<size_t>(n));
    print_lines(child, true);
    ::close(child.output);
  }
  ::close(wake[0]);
  ::close(wake[1]);
  if (!failure.empty()) {
    // How the others ended too: whether they saw the failure themselves.
    for (const Child& child : children) {
      if (child.rank == failed_rank) continue;
      std::fprintf(stderr, "launch: then rank %d %s\n", child.rank, how_it_ended(child.status).c_str());
    }
    throw Error(ErrorKind::kCommunication, "launch: " + failure);
  }
  if (received_signal != 0) {
    std::fprintf(stderr, "launch: stopped by signal %d\n", static_cast<int>(received_signal));
    return 128 + received_signal;
  }
  return 0;
}

}  // namespace

void add_launch_command(CLI::App& app) {
  auto args = std::make_shared<LaunchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "Start N processes of COMMAND as the ranks of a world on this host (WEIR_RANK, WEIR_WORLD_SIZE, ... set)");
  cmd->add_option("-n,--nproc-per-node", args->processes, "processes to start on this host")->required();
  cmd->add_option("--nnodes", args->nnodes, "hosts in the job, each running launch (default 1)");
  cmd->add_option("--node-rank", args->node_rank, "this host among them, 0 .. nnodes-1 (default 0)");
  cmd->add_option("--master-addr", args->master_addr, "where rank 0 serves the rendezvous store (default 127.0.0.1)");
  cmd->add_option("--master-port", args->master_port, "its port (default 29500)");
  cmd->add_option("command", args->command, "the command every rank runs, after --")->required();
  cmd->callback([args] {
    int status = launch(*args);
    if (status != 0) std::exit(status);
  });
}

}  // namespace weir::tools
