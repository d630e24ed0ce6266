// `graph-runner ps-server` as real processes on 127.0.0.1: a client reaches
// two of them through the ports they print, trains a table, and stops them
// (each exits 0); a server killed with SIGKILL fails the client's next call
// with an error naming its address; a port in use is a clear error.
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/error.h"
#include "distributed/ps/grpc_parameter_client.h"
#include "tests/tools/process_util.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

// One `graph-runner ps-server` child: its pid and the endpoint it printed.
// The destructor kills it if it is still running.
class ServerProcess {
 public:
  explicit ServerProcess(const std::string& port = "0") {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execl(WEIR_GRAPH_RUNNER, WEIR_GRAPH_RUNNER, "ps-server", "--port", port.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
    // The first line, within 20 s: "ps-server listening on HOST:PORT".
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char c;
      if (::read(out_, &c, 1) != 1) break;
      line += c;
    }
    const std::string prefix = "ps-server listening on ";
    if (line.rfind(prefix, 0) == 0) endpoint_ = line.substr(prefix.size(), line.size() - prefix.size() - 1);
  }
  ~ServerProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
  }
  const std::string& endpoint() const { return endpoint_; }
  void kill_now() { ::kill(pid_, SIGKILL); }
  // The exit status within `limit`, or -1 (then killed).
  int wait_exit(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool reaped_ = false;
  std::string endpoint_;
};

ParameterTableConfig embedding() {
  ParameterTableConfig config;
  config.name = "emb";
  config.sparse = true;
  config.width = 8;
  config.rule = TableRule::kAdagrad;
  config.init = {TableInitializer::Kind::kUniform, 0.1, 1};
  return config;
}

TEST(PsServerProcess, ClientsTrainThroughTwoServersAndStopThem) {
  ServerProcess a, b;
  ASSERT_FALSE(a.endpoint().empty());
  ASSERT_FALSE(b.endpoint().empty());
  auto client = ps::connect_parameter_servers({.endpoints = {a.endpoint(), b.endpoint()}, .connect_timeout = 10s,
                                               .call_timeout = 20s});
  client->create_table(embedding());
  std::vector<int64_t> ids(100);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i * 7919);
  std::vector<float> before(ids.size() * 8), after(before.size()), grads(before.size(), 1.0f);
  client->pull_sparse("emb", ids, before.data(), 8, 0);
  client->push_sparse("emb", ids, grads.data(), 8, 0.1f, 0);
  client->pull_sparse("emb", ids, after.data(), 8, 0);
  for (size_t i = 0; i < before.size(); ++i) {
    // Adagrad's first step moves every value by lr·g/(|g| + ε) ≈ lr.
    EXPECT_NEAR(after[i], before[i] - 0.1f, 1e-5) << i;
  }
  client->stop_servers();
  EXPECT_EQ(a.wait_exit(10s), 0);
  EXPECT_EQ(b.wait_exit(10s), 0);
}

TEST(PsServerProcess, AKilledServerFailsTheNextCallNamingIt) {
  ServerProcess a, b;
  ASSERT_FALSE(b.endpoint().empty());
  auto client = ps::connect_parameter_servers({.endpoints = {a.endpoint(), b.endpoint()}, .connect_timeout = 10s,
                                               .call_timeout = 20s});
  client->create_table(embedding());
  b.kill_now();
  b.wait_exit(10s);
  std::vector<int64_t> ids(100);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  std::vector<float> grads(ids.size() * 8, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  try {
    client->push_sparse("emb", ids, grads.data(), 8, 0.1f, 0);
    ADD_FAILURE() << "a push to a dead server succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCommunication);
    EXPECT_NE(std::string(e.what()).find("parameter server 1 of 2 (" + b.endpoint() + ")"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  // Stopping reaches every server still alive, then reports the dead one.
  EXPECT_THROW(client->stop_servers(), Error);
  EXPECT_EQ(a.wait_exit(10s), 0);
}

TEST(PsServerProcess, APortInUseIsAClearError) {
  ServerProcess a;
  ASSERT_FALSE(a.endpoint().empty());
  const std::string port = a.endpoint().substr(a.endpoint().rfind(':') + 1);
  testing::ProcessResult r = testing::run_graph_runner("ps-server --port " + port);
  testing::expect_cli_error(r, "127.0.0.1:" + port);
}

}  // namespace
}  // namespace weir
