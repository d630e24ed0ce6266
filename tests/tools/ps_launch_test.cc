// graph-runner launch --servers S --workers W: S parameter servers
// (graph-runner ps-server) start first, the workers get their endpoints in
// WEIR_SERVER_ENDPOINTS, and the servers are stopped when the workers are
// done; a failed worker stops the others and then the servers; a server
// killed while the workers run fails the job naming it. With --nnodes, each
// host's launch starts its own servers and the workers get all of them.
// Every launch runs under `timeout`, and every test checks that no process
// it started is left.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/distributed/process_group.h"
#include "tests/test_util.h"
#include "tests/tools/process_util.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using testing::ProcessResult;

// `graph-runner launch ARGS`, killed after `limit_s` seconds if still running.
ProcessResult launch(const std::string& args, int limit_s = 60) {
  return testing::run_command("timeout -k 5 " + std::to_string(limit_s) + " " + WEIR_GRAPH_RUNNER + " launch " + args);
}

// The comma-separated numbers after the first "[rank R] KEY=" line.
std::vector<int> numbers_after(const std::string& output, const std::string& prefix) {
  std::vector<int> numbers;
  const size_t at = output.find(prefix);
  if (at == std::string::npos) return numbers;
  std::istringstream list(output.substr(at + prefix.size(), output.find('\n', at) - at - prefix.size()));
  std::string number;
  while (std::getline(list, number, ',')) numbers.push_back(std::stoi(number));
  return numbers;
}

bool alive(int pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// `use` (connect or bind) of a fresh socket to 127.0.0.1:`port` succeeded.
template <typename Use>
bool on_loopback(int port, Use use) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool done = use(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return done;
}

bool accepts_connections(int port) { return on_loopback(port, ::connect); }
// Whether a loopback listener could take `port` now.
bool bindable(int port) { return on_loopback(port, ::bind); }

// None of `pids` is still running.
void expect_gone(const std::vector<int>& pids, const std::string& what, const std::string& output) {
  for (int pid : pids) EXPECT_FALSE(alive(pid)) << what << " " << pid << " is still running\n" << output;
}

TEST(PsLaunch, WorkersGetTheServersEndpointsAndTheServersStopAfterThem) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = launch("--servers 2 --workers 2 -- sh -c 'echo \"role=$WEIR_ROLE rank=$WEIR_RANK "
                           "endpoints=$WEIR_SERVER_ENDPOINTS\"; echo \"pids=$WEIR_SERVER_PIDS\"'");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  ASSERT_EQ(r.status, 0) << r.output;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.output, match,
                                std::regex(R"(\[rank 0\] role=worker rank=0 endpoints=127\.0\.0\.1:(\d+),127\.0\.0\.1:(\d+)\n)")))
      << r.output;
  const std::string p1 = match[1], p2 = match[2];
  EXPECT_NE(p1, p2);
  EXPECT_NE(std::stoi(p1), 0);
  EXPECT_NE(std::stoi(p2), 0);
  EXPECT_NE(r.output.find("[rank 1] role=worker rank=1 endpoints=127.0.0.1:" + p1 + ",127.0.0.1:" + p2 + "\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[server 0] ps-server listening on 127.0.0.1:" + p1 + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[server 1] ps-server listening on 127.0.0.1:" + p2 + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[server 1] ps-server 127.0.0.1:" + p2 + " stopped"), std::string::npos) << r.output;
  const std::vector<int> servers = numbers_after(r.output, "[rank 0] pids=");
  EXPECT_EQ(servers.size(), 2u) << r.output;
  EXPECT_EQ(numbers_after(r.output, "[rank 1] pids="), servers) << r.output;
  expect_gone(servers, "server", r.output);
  EXPECT_FALSE(accepts_connections(std::stoi(p1))) << r.output;
  EXPECT_FALSE(accepts_connections(std::stoi(p2))) << r.output;
}

TEST(PsLaunch, WorkersReachEveryServer) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = launch("--servers 2 --workers 2 -- bash -c 'IFS=, read -ra E <<< \"$WEIR_SERVER_ENDPOINTS\"; "
                           "for e in \"${E[@]}\"; do exec 3<>/dev/tcp/${e%:*}/${e#*:} || exit 3; exec 3>&-; done; "
                           "echo \"reached ${#E[@]}\"; echo \"pids=$WEIR_SERVER_PIDS\"'");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("[rank 0] reached 2\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[rank 1] reached 2\n"), std::string::npos) << r.output;
  expect_gone(numbers_after(r.output, "[rank 0] pids="), "server", r.output);
}

// Rank 1 exits 3 at once; rank 0 would sleep 30 s: launch stops it (3 s
// grace, then SIGTERM), then the servers, and names rank 1.
TEST(PsLaunch, AFailedWorkerStopsTheOtherWorkersAndTheServers) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = launch("--servers 2 --workers 2 -- sh -c 'echo \"pids=$WEIR_SERVER_PIDS\"; echo \"worker=$$\"; "
                           "[ \"$WEIR_RANK\" = 1 ] && exit 3; sleep 30'");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 15s) << r.output;
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("error: launch: rank 1 exited with status 3\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("launch: then rank 0 was killed by signal 15"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("launch: then parameter server 1 (127.0.0.1:"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  expect_gone(numbers_after(r.output, "[rank 0] pids="), "server", r.output);
  expect_gone(numbers_after(r.output, "[rank 0] worker="), "worker", r.output);
}

// Rank 0 kills server 0 with SIGKILL; neither worker exits by itself (they
// make no calls): launch reports the server at once, gives the workers 3 s,
// stops them and server 1, and fails naming server 0.
TEST(PsLaunch, AServerKilledWhileWorkersRunFailsTheJobNamingIt) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = launch("--servers 2 --workers 2 -- sh -c 'echo \"pids=$WEIR_SERVER_PIDS\"; echo \"worker=$$\"; "
                           "[ \"$WEIR_RANK\" = 0 ] && kill -9 ${WEIR_SERVER_PIDS%%,*}; sleep 20'");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 15s) << r.output;
  EXPECT_NE(r.status, 0) << r.output;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.output, match, std::regex(R"(\[server 0\] ps-server listening on (127\.0\.0\.1:\d+)\n)")))
      << r.output;
  const std::string server0 = "parameter server 0 (" + match[1].str() + ")";
  EXPECT_NE(r.output.find("launch: " + server0 + " was killed by signal 9 (Killed); the workers have 3 s"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("error: launch: " + server0 + " was killed by signal 9 (Killed)\n"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("launch: then rank 0 was killed by signal 15"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("launch: then parameter server 1 (127.0.0.1:"), std::string::npos) << r.output;
  const std::vector<int> servers = numbers_after(r.output, "[rank 0] pids=");
  EXPECT_EQ(servers.size(), 2u) << r.output;
  expect_gone(servers, "server", r.output);
  expect_gone(numbers_after(r.output, "[rank 0] worker="), "worker", r.output);
  expect_gone(numbers_after(r.output, "[rank 1] worker="), "worker", r.output);
}

TEST(PsLaunch, BadSettingsAreCliErrors) {
  testing::expect_cli_error(launch("--servers 2 -n 2 --workers 3 -- true"), "-n 2 and --workers 3");
  testing::expect_cli_error(launch("--servers -1 --workers 2 -- true"), "--servers must be 0 or more, got -1");
  testing::expect_cli_error(launch("--servers 2 -- true"), "-n N (or --workers N)");
  testing::expect_cli_error(launch("--servers 1 --workers 1 --nnodes 2 --master-port 65535 -- true"),
                            "needs --master-port + 1 for the launches' store");
  // The same value twice is one setting; no servers is launch as before.
  ProcessResult r = launch("-n 2 --workers 2 -- sh -c 'echo \"role=${WEIR_ROLE-unset} endpoints=${WEIR_SERVER_ENDPOINTS-unset}\"'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("[rank 1] role=unset endpoints=unset\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[server"), std::string::npos) << r.output;
}

// A server that cannot listen (an address of no interface here) is named
// before any worker starts.
TEST(PsLaunch, AServerThatCannotListenIsNamed) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = launch("--servers 1 --server-host 192.0.2.1 --workers 2 -- sh -c 'echo started'");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("error: launch: parameter server 0 exited with status 1 before it listened"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[server 0] error: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[rank 0] started"), std::string::npos) << r.output;
}

// SIGTERM to launch reaches the workers and the servers; launch exits 143.
TEST(PsLaunch, SigtermStopsWorkersAndServers) {
  const auto start = std::chrono::steady_clock::now();
  // The shell starts launch in the background, waits for the workers to
  // start, then sends SIGTERM to launch alone.
  ProcessResult r = testing::run_command(
      "timeout -k 5 60 sh -c '" + std::string(WEIR_GRAPH_RUNNER) +
      " launch --servers 1 --workers 2 -- sh -c \"echo pids=\\$WEIR_SERVER_PIDS; echo worker=\\$\\$; sleep 30\" & "
      "for i in $(seq 300); do sleep 0.1; [ $(pgrep -P $! -c) -ge 3 ] && break; done; sleep 0.5; kill -TERM $!; wait $!; "
      "echo \"launch exited $?\"'");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_NE(r.output.find("launch: stopped by signal 15"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("launch exited 143"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[server 0] ps-server 127.0.0.1:"), std::string::npos) << r.output;
  expect_gone(numbers_after(r.output, "[rank 0] pids="), "server", r.output);
  expect_gone(numbers_after(r.output, "[rank 0] worker="), "worker", r.output);
  expect_gone(numbers_after(r.output, "[rank 1] worker="), "worker", r.output);
}

// A job of two hosts, each host's launch here on 127.0.0.1 as its own node:
// `node0` and `node1` are the files each node's workers run (bash), and
// `between` shell lines run once both launches started ($one and $zero are
// their pids). Node 0's launch output is the result's; node 1's follows it
// after "--- node 1 ---".
ProcessResult two_hosts(const testing::ScratchDir& dir, const std::string& node0, const std::string& node1,
                        const std::string& between = "") {
  // The launches' store listens on the master port + 1: both free now.
  int port = testing::unused_port();
  for (int tries = 0; tries < 20 && (port == 0 || port == 65535 || !bindable(port + 1)); ++tries) {
    port = testing::unused_port();
  }
  const std::string launch = std::string(WEIR_GRAPH_RUNNER) + " launch --nnodes 2 --master-port " +
                             std::to_string(port) + " --servers 1 --workers 1 --node-rank ";
  std::ofstream(dir / "node0.sh") << node0;
  std::ofstream(dir / "node1.sh") << node1;
  const std::string logs = (dir / "node").string();
  std::ofstream(dir / "job.sh") << launch + "1 -- bash " + (dir / "node1.sh").string() + " > " + logs + "1.log 2>&1 &\n"
                                   "one=$!\n" +
                                       launch + "0 -- bash " + (dir / "node0.sh").string() + " > " + logs + "0.log 2>&1 &\n"
                                   "zero=$!\n" +
                                       between + "\nwait $zero; echo \"node 0 exited $?\" >> " + logs + "0.log\n"
                                   "wait $one; echo \"node 1 exited $?\" >> " + logs + "1.log\n";
  ProcessResult r = testing::run_command("timeout -k 5 60 bash " + (dir / "job.sh").string());
  std::ifstream zero(logs + "0.log"), one(logs + "1.log");
  r.output += std::string(std::istreambuf_iterator<char>(zero), {}) + "--- node 1 ---\n" +
              std::string(std::istreambuf_iterator<char>(one), {});
  return r;
}

// Every worker gets both hosts' servers in node order; node 0's launch,
// whose worker is done at once, keeps its server until node 1's worker,
// 2 s later, has reached it.
TEST(PsLaunch, HostsShareTheirServersAndWaitForEachOtherAtTheEnd) {
  const testing::ScratchDir dir;
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = two_hosts(dir, "echo \"endpoints=$WEIR_SERVER_ENDPOINTS\"; echo \"pids=$WEIR_SERVER_PIDS\"\n",
                                    "sleep 2; IFS=, read -ra E <<< \"$WEIR_SERVER_ENDPOINTS\"\n"
                                    "for e in \"${E[@]}\"; do exec 3<>/dev/tcp/${e%:*}/${e#*:} || exit 3; exec 3>&-; done\n"
                                    "echo \"reached ${#E[@]}: $WEIR_SERVER_ENDPOINTS\"\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << r.output;
  EXPECT_NE(r.output.find("node 0 exited 0\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("node 1 exited 0\n"), std::string::npos) << r.output;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.output, match, std::regex(R"(\[server 0\] ps-server listening on (127\.0\.0\.1:\d+)\n)")))
      << r.output;
  const std::string server0 = match[1];
  ASSERT_TRUE(std::regex_search(r.output, match, std::regex(R"(\[server 1\] ps-server listening on (127\.0\.0\.1:\d+)\n)")))
      << r.output;
  const std::string both = server0 + "," + match[1].str();
  EXPECT_NE(r.output.find("[rank 0] endpoints=" + both + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[rank 1] reached 2: " + both + "\n"), std::string::npos) << r.output;
  const std::vector<int> servers = numbers_after(r.output, "[rank 0] pids=");
  EXPECT_EQ(servers.size(), 2u) << r.output;
  expect_gone(servers, "server", r.output);
}

// A sync job of two hosts, one worker and one server each, trains as the
// same job on one host: server i holds the same rows either way.
TEST(PsLaunch, TwoHostsTrainAsOneHostWithTheSameServers) {
  const testing::ScratchDir dir;
  const std::string train = std::string(WEIR_GRAPH_RUNNER) +
                            " train --model ctr --optimizer adagrad --lr 0.1 --batch 32 --ids-per-slot 40 "
                            "--synthetic-examples 256 --print-losses --ps sync --steps 4";
  const ProcessResult one = launch("--servers 2 --workers 2 -- " + train);
  ASSERT_EQ(one.status, 0) << one.output;
  const ProcessResult two = two_hosts(dir, "exec " + train + "\n", "exec " + train + "\n");
  ASSERT_NE(two.output.find("node 0 exited 0\n"), std::string::npos) << two.output;
  ASSERT_NE(two.output.find("node 1 exited 0\n"), std::string::npos) << two.output;
  int compared = 0;
  for (const std::string rank : {"0", "1"}) {
    for (int step = 1; step <= 4; ++step) {
      const std::regex line(R"(\[rank )" + rank + R"(\] step )" + std::to_string(step) + R"( loss: ([-+0-9.eE]+)\n)");
      std::smatch a, b;
      ASSERT_TRUE(std::regex_search(one.output, a, line)) << one.output;
      ASSERT_TRUE(std::regex_search(two.output, b, line)) << two.output;
      EXPECT_EQ(a[1].str(), b[1].str()) << "rank " << rank << ", step " << step << "\n" << two.output;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 8);
}

// Node 1's launch is killed (SIGKILL) while node 0's waits for node 1's
// workers: node 0's launch fails naming node 1 within seconds, its server
// stopped. Node 1's server dies with its launch; its worker is stopped here.
TEST(PsLaunch, AHostsLaunchThatDiesFailsTheOthersNamingIt) {
  const testing::ScratchDir dir;
  const auto start = std::chrono::steady_clock::now();
  const std::string log0 = (dir / "node0.log").string();
  const ProcessResult r = two_hosts(dir, "echo \"pids=$WEIR_SERVER_PIDS\"\n", "echo \"worker=$$\"; sleep 20\n",
                                    "for i in $(seq 300); do sleep 0.1; grep -q 'rank 0. pids=' " + log0 +
                                        " && break; done\nsleep 1; kill -9 $one");
  const std::vector<int> workers = numbers_after(r.output, "[rank 1] worker=");
  for (int pid : workers) ::kill(pid, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s) << r.output;
  EXPECT_NE(r.output.find("node 0 exited 1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error: launch: the launch of node 1 is gone (127.0.0.1:"), std::string::npos) << r.output;
  // Node 1's server got SIGTERM when its launch died, and stops on its own.
  const std::vector<int> servers = numbers_after(r.output, "[rank 0] pids=");
  EXPECT_EQ(servers.size(), 2u) << r.output;
  for (int i = 0; i < 100 && !servers.empty() && alive(servers.back()); ++i) std::this_thread::sleep_for(100ms);
  expect_gone(servers, "server", r.output);
}

}  // namespace
}  // namespace weir
