// Runs a function as the ranks of a group of real processes: fork()s one
// child per rank, collects what each child reports, and kills any child
// still running past a time limit, so no test hangs or leaves a process
// behind. Each test gets a fresh store directory.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace weir::testing {

// A directory no earlier run or other test has used.
inline std::filesystem::path fresh_store_directory(const std::string& name) {
  static std::atomic<int> counter{0};
  const char* base = std::getenv("WEIR_TEST_TMPDIR");
  std::filesystem::path dir = std::filesystem::path(base != nullptr ? base : "/tmp") /
                              (name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A loopback port nothing listens on now (the kernel's choice, released again).
inline int unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// A loopback port that is taken, by a socket that listens and never
// accepts: connections complete (the kernel's backlog) and nothing answers.
class MuteListener {
 public:
  MuteListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 && ::listen(fd_, 16) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~MuteListener() {
    if (fd_ >= 0) ::close(fd_);
  }
  MuteListener(const MuteListener&) = delete;
  MuteListener& operator=(const MuteListener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// body(rank) in `size` child processes. Returns, by rank, "" for a child
// that returned, else what it threw (or how it died, or "timed out").
inline std::vector<std::string> run_processes(int size, std::chrono::seconds limit,
                                              const std::function<void(int rank)>& body) {
  std::vector<pid_t> children(static_cast<size_t>(size), -1);
  std::vector<int> pipes(static_cast<size_t>(size), -1);
  for (int r = 0; r < size; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) return std::vector<std::string>(static_cast<size_t>(size), "pipe failed");
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::string message;
      try {
        body(r);
      } catch (const std::exception& e) {
        message = e.what();
        if (message.empty()) message = "an exception without a message";
      } catch (...) {
        message = "an unknown exception";
      }
      if (!message.empty() && ::write(fds[1], message.data(), message.size()) < 0) message.clear();
      ::close(fds[1]);
      ::_exit(message.empty() ? 0 : 1);  // not back into the test runner
    }
    ::close(fds[1]);
    children[static_cast<size_t>(r)] = pid;
    pipes[static_cast<size_t>(r)] = fds[0];
  }
  std::vector<std::string> results(static_cast<size_t>(size));
  std::vector<bool> done(static_cast<size_t>(size), false);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int remaining = size;
  while (remaining > 0) {
    for (int r = 0; r < size; ++r) {
      if (done[static_cast<size_t>(r)]) continue;
      int status = 0;
      if (::waitpid(children[static_cast<size_t>(r)], &status, WNOHANG) == children[static_cast<size_t>(r)]) {
        done[static_cast<size_t>(r)] = true;
        --remaining;
        char buffer[4096];
        ssize_t n = ::read(pipes[static_cast<size_t>(r)], buffer, sizeof(buffer));
        std::string message = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
        if (WIFSIGNALED(status)) message = "killed by signal " + std::to_string(WTERMSIG(status));
        else if (WEXITSTATUS(status) != 0 && message.empty()) message = "exit status " + std::to_string(WEXITSTATUS(status));
        results[static_cast<size_t>(r)] = message;
      }
    }
    if (remaining > 0 && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < size; ++r) {
        if (done[static_cast<size_t>(r)]) continue;
        ::kill(children[static_cast<size_t>(r)], SIGKILL);
        ::waitpid(children[static_cast<size_t>(r)], nullptr, 0);
        results[static_cast<size_t>(r)] = "timed out";
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int fd : pipes) ::close(fd);
  return results;
}

}  // namespace weir::testing
