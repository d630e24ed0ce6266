#include "distributed/tcp_store.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "core/error.h"
#include "distributed/tcp_connect.h"

namespace weir {

namespace {

// Operations and reply statuses on the wire.
constexpr uint8_t kSet = 1, kGet = 2, kAdd = 3, kCheck = 4;
constexpr uint8_t kOk = 0, kMissing = 1, kBad = 2;
// A request larger than this is a broken or hostile client.
constexpr uint32_t kMaxField = 64u << 20;

// Reads exactly `size` bytes before `deadline`; false on EOF, error or timeout.
bool read_exactly(int fd, void* data, size_t size, std::chrono::steady_clock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    ssize_t n = ::recv(fd, p, size, 0);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Writes all `size` bytes before `deadline`; false on error or timeout (a
// peer that stops reading fills the socket buffer: wait until it drains,
// not in a loop of failed sends).
bool write_all(int fd, const void* data, size_t size, std::chrono::steady_clock::time_point deadline) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return false;
      pollfd pfd{fd, POLLOUT, 0};
      if (::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000))) < 0 && errno != EINTR) return false;
      continue;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void append_field(std::string& out, const std::string& field) {
  uint32_t size = htonl(static_cast<uint32_t>(field.size()));
  out.append(reinterpret_cast<const char*>(&size), 4);
  out += field;
}

bool read_field(int fd, std::string& field, std::chrono::steady_clock::time_point deadline) {
  uint32_t size = 0;
  if (!read_exactly(fd, &size, 4, deadline)) return false;
  size = ntohl(size);
  if (size > kMaxField) return false;
  field.resize(size);
  return size == 0 || read_exactly(fd, field.data(), size, deadline);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

TcpStoreServer::TcpStoreServer(int port) {
  listen_fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = listen_fd_ >= 0;
  if (!v6) listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw Error(ErrorKind::kCommunication, "the rendezvous store cannot open a socket: " + errno_text());
  int one = 1, zero = 0;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int bound = -1;
  if (v6) {
    ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));  // IPv4 clients too
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<uint16_t>(port));
    bound = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    bound = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  }
  if (bound != 0 || ::listen(listen_fd_, 128) != 0) {
    std::string why = errno_text();
    ::close(listen_fd_);
    throw Error(ErrorKind::kCommunication, "the rendezvous store cannot listen on port " + std::to_string(port) + ": " + why);
  }
  sockaddr_storage actual{};
  socklen_t length = sizeof(actual);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&actual), &length);
  port_ = ntohs(actual.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&actual)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&actual)->sin_port);
  if (::pipe2(wake_fds_, O_CLOEXEC) != 0) {
    ::close(listen_fd_);
    throw Error(ErrorKind::kCommunication, "the rendezvous store cannot make its wake-up pipe: " + errno_text());
  }
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  char byte = 1;
  if (::write(wake_fds_[1], &byte, 1) < 0) {
    // The serving thread also stops when the pipe closes below.
  }
  thread_.join();
  ::close(wake_fds_[0]);
  ::close(wake_fds_[1]);
  ::close(listen_fd_);
}

void TcpStoreServer::serve() {
  std::map<std::string, std::string> data;
  std::vector<int> clients;
  while (true) {
    std::vector<pollfd> fds = {{wake_fds_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (int fd : clients) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;
    if (fds[1].revents & POLLIN) {
      int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        int one = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        clients.push_back(client);
      }
    }
    std::vector<int> closed;
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const int fd = fds[i].fd;
      // A request arrives whole and at once; one that stalls for seconds is dropped.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      uint8_t op = 0;
      std::string key, value;
      if (!read_exactly(fd, &op, 1, deadline) || !read_field(fd, key, deadline) || !read_field(fd, value, deadline)) {
        closed.push_back(fd);
        continue;
      }
      uint8_t status = kOk;
      std::string reply;
      switch (op) {
        case kSet: data[key] = value; break;
        case kGet: {
          auto it = data.find(key);
          if (it == data.end()) {
            status = kMissing;
          } else {
            reply = it->second;
          }
          break;
        }
        case kCheck: status = data.count(key) ? kOk : kMissing; break;
        case kAdd: {
          try {
            int64_t sum = (data.count(key) ? std::stoll(data[key]) : 0) + std::stoll(value);
            data[key] = reply = std::to_string(sum);
          } catch (const std::exception&) {
            status = kBad;
          }
          break;
        }
        default: status = kBad;
      }
      std::string message(1, static_cast<char>(status));
      append_field(message, reply);
      if (!write_all(fd, message.data(), message.size(), deadline)) closed.push_back(fd);
    }
    for (int fd : closed) {
      ::close(fd);
      clients.erase(std::find(clients.begin(), clients.end(), fd));
    }
  }
  for (int fd : clients) ::close(fd);
}

TcpStore::TcpStore(std::string host, int port, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::string last = "no attempt";
  while (fd_ < 0) {
    fd_ = tcp_connect(host_, port_, deadline, last);
    if (fd_ >= 0) break;
    if (std::chrono::steady_clock::now() + std::chrono::milliseconds(100) > deadline) {
      throw Error(ErrorKind::kCommunication, "cannot reach the rendezvous store at " + address() + " within " +
                                                 std::to_string(timeout_.count()) + " ms: " + last);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server may not be up yet
  }
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TcpStore::address() const { return host_ + ":" + std::to_string(port_); }

std::pair<uint8_t, std::string> TcpStore::request(uint8_t op, const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string message(1, static_cast<char>(op));
  append_field(message, key);
  append_field(message, value);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  uint8_t status = 0;
  std::string reply;
  if (!write_all(fd_, message.data(), message.size(), deadline) || !read_exactly(fd_, &status, 1, deadline) ||
      !read_field(fd_, reply, deadline)) {
    throw Error(ErrorKind::kCommunication, "the rendezvous store at " + address() + " stopped answering (key '" + key + "') within " +
                                               std::to_string(timeout_.count()) + " ms");
  }
  if (status == kBad) throw Error(ErrorKind::kInvalidArgument, "the rendezvous store at " + address() + " refused the request for '" + key + "'");
  return {status, std::move(reply)};
}

void TcpStore::set(const std::string& key, const std::string& value) { request(kSet, key, value); }

bool TcpStore::check(const std::string& key) { return request(kCheck, key, "").first == kOk; }

int64_t TcpStore::add(const std::string& key, int64_t delta) { return std::stoll(request(kAdd, key, std::to_string(delta)).second); }

std::string TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  return request(kGet, key, "").second;
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    std::string missing;
    for (const std::string& key : keys) {
      if (!check(key)) missing += (missing.empty() ? "'" : ", '") + key + "'";
    }
    if (missing.empty()) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error(ErrorKind::kCommunication, "the rendezvous store at " + address() + " has no " + missing + " after " +
                                                 std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

}  // namespace weir
