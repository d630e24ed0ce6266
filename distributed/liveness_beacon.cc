#include "distributed/liveness_beacon.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "distributed/tcp_connect.h"

namespace weir {

LivenessBeacon::LivenessBeacon(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(host.c_str(), "0", &hints, &found);
  if (resolved != 0) {
    throw Error(ErrorKind::kCommunication, "the liveness beacon cannot resolve '" + host + "': " + ::gai_strerror(resolved));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      fd_ = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  char port[NI_MAXSERV] = {};
  if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &length) != 0 ||
      ::getnameinfo(reinterpret_cast<sockaddr*>(&bound), length, nullptr, 0, port, sizeof(port), NI_NUMERICSERV) != 0) {
    if (fd_ >= 0) ::close(fd_);
    throw Error(ErrorKind::kCommunication, "the liveness beacon cannot listen on '" + host + "': " + why);
  }
  address_ = host + ":" + port;
  acceptor_ = std::thread([this] { accept_and_close(); });
}

LivenessBeacon::~LivenessBeacon() {
  ::shutdown(fd_, SHUT_RDWR);  // wakes the blocked accept()
  acceptor_.join();
  ::close(fd_);
}

// Probes only need the connection to complete; an unaccepted one would sit
// in the backlog, and a full backlog would make a live process look dead.
void LivenessBeacon::accept_and_close() {
  while (true) {
    int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client >= 0) {
      ::close(client);
    } else if (errno == EINVAL || errno == EBADF) {
      return;  // shut down
    } else if (errno != EINTR && errno != ECONNABORTED) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // out of descriptors: try again
    }
  }
}

std::string probe_liveness(const std::string& address, std::chrono::milliseconds timeout) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return "'" + address + "' is not host:port";
  std::string error;
  int port = 0;
  try {
    port = std::stoi(address.substr(colon + 1));
  } catch (const std::exception&) {
    return "'" + address + "' is not host:port";
  }
  int fd = tcp_connect(address.substr(0, colon), port, std::chrono::steady_clock::now() + timeout, error);
  if (fd < 0) return error;
  ::close(fd);
  return "";
}

}  // namespace weir
