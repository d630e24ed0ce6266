#include "tools/graph-runner/launch_command.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "tools/graph-runner/launch_rendezvous.h"

namespace weir::tools {

namespace {

using Clock = std::chrono::steady_clock;

// How long the parameter servers have to say where they listen.
constexpr std::chrono::seconds kServerStartLimit{30};
// How long the launches of a job on several hosts wait for each other at
// the start (their hosts start them at different times).
constexpr std::chrono::seconds kNodesMeetLimit{300};
// How long the others have to notice a failure (a collective with a dead
// rank, or a call to a dead server, fails on its own) before SIGTERM.
constexpr std::chrono::seconds kNoticeGrace{3};
// How long a process has between SIGTERM and SIGKILL.
constexpr std::chrono::seconds kStopGrace{10};

constexpr const char* kListening = "ps-server listening on ";

struct LaunchArgs {
  int processes = 0;  // -n, or --workers
  int workers = 0;
  bool processes_given = false;
  bool workers_given = false;
  int servers = 0;
  std::string server_host = "127.0.0.1";
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

// A process launch started: a worker (rank) or a parameter server.
struct Child {
  std::string name;     // "rank 3" or "server 1": the prefix of its lines, in brackets
  int index = 0;        // its rank, or its server index
  bool server = false;
  pid_t pid = -1;
  int output = -1;      // the read end of its stdout+stderr
  std::string partial;  // a line not yet ended
  bool running = true;
  int status = 0;
  std::string endpoint;        // a server's HOST:PORT, once it said
  bool killed_late = false;    // a server that needed SIGKILL to stop
};

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

bool failed(int status) { return WIFSIGNALED(status) || WEXITSTATUS(status) != 0; }

// "parameter server 1 (127.0.0.1:4567)", or without the address before it said.
std::string server_name(const Child& server) {
  return "parameter server " + std::to_string(server.index) + (server.endpoint.empty() ? "" : " (" + server.endpoint + ")");
}

// Prints the complete lines of `child`'s output so far, prefixed; a
// server's first "ps-server listening on HOST:PORT" gives its endpoint.
void print_lines(Child& child, bool flush) {
  size_t start = 0;
  while (true) {
    size_t end = child.partial.find('\n', start);
    if (end == std::string::npos) break;
    const std::string line = child.partial.substr(start, end - start);
    if (child.server && child.endpoint.empty() && line.rfind(kListening, 0) == 0) {
      child.endpoint = line.substr(std::strlen(kListening));
    }
    std::printf("[%s] %s\n", child.name.c_str(), line.c_str());
    start = end + 1;
  }
  child.partial.erase(0, start);
  if (flush && !child.partial.empty()) {
    std::printf("[%s] %s\n", child.name.c_str(), child.partial.c_str());
    child.partial.clear();
  }
  std::fflush(stdout);
}

// Reads what `child` printed (once, or until nothing is left with `all`);
// closes its pipe at the end of its output.
void read_output(Child& child, bool all) {
  while (child.output >= 0) {
    char buffer[65536];
    ssize_t n = ::read(child.output, buffer, sizeof(buffer));
    if (n > 0) {
      child.partial.append(buffer, static_cast<size_t>(n));
      print_lines(child, false);
      if (!all) return;
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      print_lines(child, true);
      ::close(child.output);
      child.output = -1;
    } else {
      return;  // nothing there now
    }
  }
}

// Whether `child` ended since the last look; then its status is set and
// what it left behind in its process group is killed.
bool reap(Child& child) {
  if (!child.running || ::waitpid(child.pid, &child.status, WNOHANG) != child.pid) return false;
  child.running = false;
  ::kill(-child.pid, SIGKILL);  // whatever it left behind in its group
  read_output(child, true);     // its last words before launch names it
  return true;
}

// Starts `command` in its own process group (so stopping it stops what it
// started too: a shell's children, a data loader's workers) with
// `environment` added, its stdout and stderr into a pipe.
pid_t start(const std::vector<std::string>& command, const std::vector<std::pair<std::string, std::string>>& environment,
            bool dies_with_launch, int& output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorKind::kIo, std::string("launch: cannot make a pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(ErrorKind::kIo, std::string("launch: cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (dies_with_launch) {
      // A server outlives nothing of launch's: if launch itself is killed
      // (SIGKILL, no chance to stop it), the kernel stops it.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(1);
    }
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "launch: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    std::fflush(stderr);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever of parent and child runs first
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);  // the loop reads whatever is there, never waits on one process
  output = fds[0];
  return pid;
}

std::string this_executable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) throw Error(ErrorKind::kIo, std::string("launch: cannot find its own executable: ") + std::strerror(errno));
  return std::string(path, static_cast<size_t>(n));
}

// One run of launch: its parameter servers, if any, and its workers.
class Job {
 public:
  // `nodes`: the other hosts' launches, with --servers and --nnodes > 1.
  Job(const LaunchArgs& args, LaunchRendezvous* nodes) : args_(args), nodes_(nodes) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(ErrorKind::kIo, "launch: cannot make a pipe");
    wake_fd = wake_[1];
    struct sigaction action {};
    action.sa_handler = on_signal;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
  }
  // On the way out by an exception: nothing launch started outlives it.
  ~Job() {
    for (std::vector<Child>* group : {&workers_, &servers_}) {
      for (Child& child : *group) {
        if (child.running) {
          ::kill(-child.pid, SIGKILL);
          ::waitpid(child.pid, &child.status, 0);
        }
        if (child.output >= 0) ::close(child.output);
      }
    }
    wake_fd = -1;
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int run() {
    if (args_.servers > 0 && !start_servers()) return stopped_by_signal();
    start_workers();
    run_workers();
    for (Child& worker : workers_) read_output(worker, true);  // what they printed last: the pipes hold it
    if (nodes_ != nullptr && failure_.empty() && received_signal == 0) wait_for_the_other_hosts();
    stop_servers();
    if (failure_.empty()) {
      // A server that did not stop cleanly when the workers were done.
      for (const Child& server : servers_) {
        if (!server.killed_late && !failed(server.status)) continue;
        failure_ = server_name(server) + (server.killed_late ? " did not stop within 10 s of SIGTERM"
                                                             : " " + how_it_ended(server.status) + " when stopped");
        failed_ = &server;
        break;
      }
    }
    if (!failure_.empty()) {
      // How the others ended too: whether they saw the failure themselves.
      for (const Child& worker : workers_) {
        if (&worker != failed_) std::fprintf(stderr, "launch: then rank %d %s\n", worker.index, how_it_ended(worker.status).c_str());
      }
      for (const Child& server : servers_) {
        if (&server != failed_) {
          std::fprintf(stderr, "launch: then %s %s\n", server_name(server).c_str(), how_it_ended(server.status).c_str());
        }
      }
      throw Error(ErrorKind::kCommunication, "launch: " + failure_);
    }
    if (received_signal != 0) return stopped_by_signal();
    return 0;
  }

 private:
  int stopped_by_signal() {
    std::fprintf(stderr, "launch: stopped by signal %d\n", static_cast<int>(received_signal));
    return 128 + received_signal;
  }

  // Waits up to `timeout_ms` for output or a signal, and prints what the
  // workers and servers printed.
  void pump(int timeout_ms) {
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}};
    for (std::vector<Child>* group : {&workers_, &servers_}) {
      for (const Child& child : *group) {
        if (child.output >= 0) fds.push_back({child.output, POLLIN, 0});
      }
    }
    ::poll(fds.data(), fds.size(), timeout_ms);
    char drain[64];
    while (::read(wake_[0], drain, sizeof(drain)) > 0) {
    }
    for (std::vector<Child>* group : {&workers_, &servers_}) {
      for (Child& child : *group) read_output(child, false);
    }
  }

  void signal_all(std::vector<Child>& group, int signal) {
    for (Child& child : group) {
      if (child.running) ::kill(-child.pid, signal);  // its whole process group
    }
  }

  // Starts the servers and waits until each said where it listens. False
  // when a signal to launch came first (the servers are stopped then);
  // throws naming a server that ended or stayed silent.
  bool start_servers() {
    const std::string self = this_executable();
    servers_.resize(static_cast<size_t>(args_.servers));
    for (int i = 0; i < args_.servers; ++i) {
      Child& server = servers_[static_cast<size_t>(i)];
      server.index = args_.node_rank * args_.servers + i;  // hosts' servers in node order
      server.name = "server " + std::to_string(server.index);
      server.server = true;
      server.pid = start({self, "ps-server", "--host", args_.server_host, "--port", "0"},
                         {{"WEIR_ROLE", "server"}, {"WEIR_SERVER_INDEX", std::to_string(server.index)}}, true,
                         server.output);
    }
    const auto deadline = Clock::now() + kServerStartLimit;
    while (true) {
      const Child* silent = nullptr;
      for (const Child& server : servers_) {
        if (server.endpoint.empty()) {
          silent = &server;
          break;
        }
      }
      if (silent == nullptr) return true;
      pump(100);
      if (received_signal != 0) {
        signal_all(servers_, received_signal);
        stop_servers();
        return false;
      }
      for (Child& server : servers_) {
        if (!reap(server)) continue;
        const std::string what = server_name(server) + " " + how_it_ended(server.status) +
                                 (server.endpoint.empty() ? " before it listened" : " before the workers started");
        stop_servers();
        throw Error(ErrorKind::kCommunication, "launch: " + what);
      }
      if (Clock::now() > deadline) {
        const std::string what = server_name(*silent) + " did not say where it listens within " +
                                 std::to_string(kServerStartLimit.count()) + " s";
        stop_servers();
        throw Error(ErrorKind::kCommunication, "launch: " + what);
      }
    }
  }

  void start_workers() {
    const int world = args_.nnodes * args_.processes;
    std::string endpoints, pids;
    for (const Child& server : servers_) {
      endpoints += (endpoints.empty() ? "" : ",") + server.endpoint;
      pids += (pids.empty() ? "" : ",") + std::to_string(server.pid);
    }
    if (nodes_ != nullptr) {
      // Every host's servers, in node order, each host's the same count
      // (the servers' indices and the rows they hold follow from it).
      const std::vector<std::string> every_endpoints = nodes_->all_gather("servers", endpoints);
      const std::vector<std::string> every_pids = nodes_->all_gather("server-pids", pids);
      endpoints.clear();
      pids.clear();
      for (int n = 0; n < args_.nnodes; ++n) {
        const std::string& theirs = every_endpoints[static_cast<size_t>(n)];
        const int count = theirs.empty() ? 0 : 1 + static_cast<int>(std::count(theirs.begin(), theirs.end(), ','));
        if (count != args_.servers) {
          throw Error(ErrorKind::kInvalidArgument,
                      "launch: node " + std::to_string(n) + " started " + std::to_string(count) +
                          " parameter servers and this node (" + std::to_string(args_.node_rank) + ") " +
                          std::to_string(args_.servers) + ": give every host's launch the same --servers");
        }
        endpoints += (endpoints.empty() ? "" : ",") + theirs;
        pids += (pids.empty() ? "" : ",") + every_pids[static_cast<size_t>(n)];
      }
    }
    workers_.resize(static_cast<size_t>(args_.processes));
    for (int l = 0; l < args_.processes; ++l) {
      Child& worker = workers_[static_cast<size_t>(l)];
      worker.index = args_.node_rank * args_.processes + l;
      worker.name = "rank " + std::to_string(worker.index);
      std::vector<std::pair<std::string, std::string>> environment = {
          {"WEIR_RANK", std::to_string(worker.index)},
          {"WEIR_WORLD_SIZE", std::to_string(world)},
          {"WEIR_LOCAL_RANK", std::to_string(l)},
          {"WEIR_LOCAL_WORLD_SIZE", std::to_string(args_.processes)},
          {"WEIR_MASTER_ADDR", args_.master_addr},
          {"WEIR_MASTER_PORT", std::to_string(args_.master_port)}};
      if (!servers_.empty()) {
        environment.insert(environment.end(),
                           {{"WEIR_ROLE", "worker"}, {"WEIR_SERVER_ENDPOINTS", endpoints}, {"WEIR_SERVER_PIDS", pids}});
      }
      worker.pid = start(args_.command, environment, false, worker.output);
    }
  }

  // Until every worker has ended: forwards signals, and on the first
  // failure (a worker's, or a server's) stops the workers after a grace.
  void run_workers() {
    bool stopping = false;
    auto stop_deadline = Clock::time_point::max();
    auto terminate_at = Clock::time_point::max();
    int forwarded = 0;
    // The others first get a moment to notice the failure and say so
    // themselves; then SIGTERM, then SIGKILL past the grace period.
    auto begin_stopping = [&](const std::string& failure, const Child& who, const char* then) {
      failure_ = failure;
      failed_ = &who;
      std::fprintf(stderr, "launch: %s; %s\n", failure.c_str(), then);
      stopping = true;
      terminate_at = Clock::now() + kNoticeGrace;
      stop_deadline = terminate_at + kStopGrace;
    };
    int running = args_.processes;
    while (running > 0) {
      pump(100);
      if (received_signal != 0 && forwarded != received_signal) {
        forwarded = received_signal;
        signal_all(workers_, received_signal);  // the workers decide how to stop; the grace period below bounds it
        signal_all(servers_, received_signal);
        if (!stopping) {
          stopping = true;
          stop_deadline = Clock::now() + kStopGrace;
        }
      }
      // Servers first: a worker that fails because a server died is seen
      // after the server, so the server is named.
      for (Child& server : servers_) {
        if (!reap(server) || stopping) continue;
        if (!failed(server.status)) {
          // A worker's client may stop the servers before the workers exit.
          std::fprintf(stderr, "launch: %s exited with status 0 while the workers run (stopped by a worker?)\n",
                       server_name(server).c_str());
          continue;
        }
        begin_stopping(server_name(server) + " " + how_it_ended(server.status), server,
                       "the workers have 3 s to notice and exit before they are stopped");
      }
      // The workers that ended since the last look. When several failed at
      // once, one killed by a signal is named first: the others most likely
      // exited because they lost it (a collective with a dead peer fails at
      // once), and rank order alone would name them instead.
      Child* first_failed = nullptr;
      for (Child& worker : workers_) {
        if (!reap(worker)) continue;
        --running;
        if (failed(worker.status) &&
            (first_failed == nullptr || (WIFSIGNALED(worker.status) && !WIFSIGNALED(first_failed->status)))) {
          first_failed = &worker;
        }
      }
      if (first_failed != nullptr && failure_.empty() && !stopping) {
        begin_stopping("rank " + std::to_string(first_failed->index) + " " + how_it_ended(first_failed->status),
                       *first_failed, servers_.empty() ? "stopping the other ranks" : "stopping the other ranks, then the servers");
      }
      if (Clock::now() > terminate_at) {
        signal_all(workers_, SIGTERM);
        terminate_at = Clock::time_point::max();
      }
      if (stopping && Clock::now() > stop_deadline) {
        signal_all(workers_, SIGKILL);  // past the grace period
        stop_deadline = Clock::time_point::max();
      }
    }
  }

  // This host's workers are done; the other hosts' may still use this
  // host's servers. Waits for them, watching this host's servers and
  // forwarding nothing: a signal to launch ends the wait.
  void wait_for_the_other_hosts() {
    try {
      nodes_->finish([this] {
        pump(200);
        if (received_signal != 0) return false;
        for (Child& server : servers_) {
          if (!reap(server)) continue;
          failure_ = server_name(server) + " " + how_it_ended(server.status) + " while other hosts' workers ran";
          failed_ = &server;
          return false;
        }
        return true;
      });
    } catch (const Error& e) {
      failure_ = e.message();
      failed_ = nullptr;
    }
  }

  // SIGTERM to each server still running, SIGKILL to those still running
  // 10 s later; returns when all have ended.
  void stop_servers() {
    signal_all(servers_, SIGTERM);
    const auto deadline = Clock::now() + kStopGrace;
    bool killed = false;
    while (true) {
      for (Child& server : servers_) reap(server);
      bool any = false;
      for (const Child& server : servers_) any = any || server.running;
      if (!any) break;
      if (!killed && Clock::now() > deadline) {
        for (Child& server : servers_) server.killed_late = server.running;
        signal_all(servers_, SIGKILL);
        killed = true;
      }
      pump(100);
    }
    for (Child& server : servers_) read_output(server, true);
  }

  const LaunchArgs& args_;
  LaunchRendezvous* nodes_;
  int wake_[2] = {-1, -1};
  std::vector<Child> servers_;
  std::vector<Child> workers_;
  std::string failure_;             // the first failure, and how
  const Child* failed_ = nullptr;  // whose
};

int launch(LaunchArgs args) {
  if (!args.processes_given && !args.workers_given) {
    throw Error(ErrorKind::kInvalidArgument, "launch: how many workers? give -n N (or --workers N)");
  }
  if (args.processes_given && args.workers_given && args.processes != args.workers) {
    throw Error(ErrorKind::kInvalidArgument, "launch: -n " + std::to_string(args.processes) + " and --workers " +
                                                 std::to_string(args.workers) + " disagree (the same setting: give one)");
  }
  if (!args.processes_given) args.processes = args.workers;
  if (args.processes < 1) throw Error(ErrorKind::kInvalidArgument, "launch: -n must be at least 1, got " + std::to_string(args.processes));
  if (args.servers < 0) throw Error(ErrorKind::kInvalidArgument, "launch: --servers must be 0 or more, got " + std::to_string(args.servers));
  if (args.nnodes < 1 || args.node_rank < 0 || args.node_rank >= args.nnodes) {
    throw Error(ErrorKind::kInvalidArgument, "launch: --node-rank " + std::to_string(args.node_rank) +
                                                 " is not a node of --nnodes " + std::to_string(args.nnodes));
  }
  if (args.master_port < 1 || args.master_port > 65535) {
    throw Error(ErrorKind::kInvalidArgument, "launch: --master-port " + std::to_string(args.master_port) + " is not a TCP port");
  }
  if (args.command.empty()) throw Error(ErrorKind::kInvalidArgument, "launch: no command to run (give it after --)");
  if (args.servers > 0 && args.nnodes > 1 && args.master_port == 65535) {
    throw Error(ErrorKind::kInvalidArgument, "launch: --servers with --nnodes needs --master-port + 1 for the "
                                             "launches' store; 65535 has none");
  }
  std::unique_ptr<LaunchRendezvous> nodes;
  try {
    if (args.servers > 0 && args.nnodes > 1) {
      // Before any child starts: a signal now just ends launch.
      nodes = std::make_unique<LaunchRendezvous>(args.nnodes, args.node_rank, args.master_addr, args.master_port,
                                                 args.server_host, kNodesMeetLimit);
    }
    Job job(args, nodes.get());
    return job.run();
  } catch (const Error& e) {
    if (nodes) nodes->fail(e.message());  // the other hosts' launches stop waiting for this one
    if (e.message().rfind("launch: ", 0) == 0) throw;
    throw Error(e.kind(), "launch: " + e.message());  // the store's, the rendezvous's
  }
}

}  // namespace

void add_launch_command(CLI::App& app) {
  auto args = std::make_shared<LaunchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "launch",
      "Start N processes of COMMAND as the ranks of a world on this host (WEIR_RANK, WEIR_WORLD_SIZE, ... set); "
      "with --servers S, start S parameter servers first and the ranks as their workers");
  CLI::Option* processes = cmd->add_option("-n,--nproc-per-node", args->processes,
                                           "processes (ranks, workers) to start on this host; -n or --workers is required");
  CLI::Option* workers = cmd->add_option("--workers", args->workers, "the same as -n");
  cmd->add_option("--servers", args->servers,
                  "parameter servers (graph-runner ps-server) to start before the workers, on this host (default 0: none)");
  cmd->add_option("--server-host", args->server_host, "the address the parameter servers listen on (default 127.0.0.1)");
  cmd->add_option("--nnodes", args->nnodes, "hosts in the job, each running launch (default 1)");
  cmd->add_option("--node-rank", args->node_rank, "this host among them, 0 .. nnodes-1 (default 0)");
  cmd->add_option("--master-addr", args->master_addr, "where rank 0 serves the rendezvous store (default 127.0.0.1)");
  cmd->add_option("--master-port", args->master_port, "its port (default 29500)");
  cmd->add_option("command", args->command, "the command every rank runs, after --")->required();
  cmd->footer(
      "Every rank gets WEIR_RANK, WEIR_WORLD_SIZE, WEIR_LOCAL_RANK, WEIR_LOCAL_WORLD_SIZE, WEIR_MASTER_ADDR and\n"
      "WEIR_MASTER_PORT; its output lines are prefixed \"[rank r] \". When one fails, the others get 3 s to\n"
      "notice, then SIGTERM, then SIGKILL 10 s later; SIGINT/SIGTERM to launch is forwarded.\n"
      "\n"
      "With --servers S (a parameter-server job), launch first starts S servers, `graph-runner ps-server\n"
      "--host H --port 0` with WEIR_ROLE=server and WEIR_SERVER_INDEX=i, output prefixed \"[server i] \",\n"
      "and waits (30 s at most) until each says where it listens. Then the workers (the ranks) get also:\n"
      "  WEIR_ROLE=worker                      this process's role in the job (the servers': server)\n"
      "  WEIR_SERVER_ENDPOINTS=HOST:PORT,...   the servers' addresses, in server order: what a\n"
      "                                        parameter client connects to\n"
      "  WEIR_SERVER_PIDS=PID,...              the servers' process ids, same order (for debugging)\n"
      "When every worker has exited 0, the servers get SIGTERM (SIGKILL 10 s later) and must exit 0. A\n"
      "server that dies while the workers run fails the job: the workers get 3 s to notice (their calls\n"
      "to it fail naming it) before they are stopped.\n"
      "\n"
      "With --servers S and --nnodes N, every host's launch starts S servers (listening on --server-host,\n"
      "which the other hosts must reach) and its workers; the launches meet through a store that node 0's\n"
      "launch serves on --master-port + 1 (5 min at most for all to come), so that every worker gets all\n"
      "N*S servers in node order (server n*S+i is node n's i-th). A host whose workers are done keeps its\n"
      "servers until every host's are, and fails when another host's launch failed or is gone.");
  cmd->callback([args, processes, workers] {
    args->processes_given = processes->count() > 0;
    args->workers_given = workers->count() > 0;
    int status = launch(*args);
    if (status != 0) std::exit(status);
  });
}

}  // namespace weir::tools
