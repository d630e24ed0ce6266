// A process's liveness beacon, so that a rank whose collective failed or
// stalls can name the peers that are gone. The beacon is a listening TCP
// socket whose thread accepts each connection and closes it at once: while
// the process lives, connections succeed; when it dies, for any reason
// (SIGKILL included), the kernel closes the socket and connections are
// refused. Probing needs neither Gloo, whose I/O errors
// name a peer only by a socket address that may be an ephemeral port, nor
// the store, which dies with rank 0.
//
//   weir::LivenessBeacon beacon("127.0.0.1");          // one per process
//   store.set("job/beacon/1", beacon.address());        // "127.0.0.1:41213"
//   std::string why = weir::probe_liveness("127.0.0.1:41213", std::chrono::seconds(2));
//   // "": alive; else "Connection refused", "Connection timed out", ...
#pragma once

#include <chrono>
#include <string>
#include <thread>

namespace weir {

class LivenessBeacon {
 public:
  // Listens on `host` at a port the kernel chooses; throws
  // weir::Error(kCommunication) naming the host when it cannot.
  explicit LivenessBeacon(const std::string& host);
  ~LivenessBeacon();
  LivenessBeacon(const LivenessBeacon&) = delete;
  LivenessBeacon& operator=(const LivenessBeacon&) = delete;

  const std::string& address() const { return address_; }  // "host:port"

 private:
  void accept_and_close();

  int fd_ = -1;
  std::string address_;
  std::thread acceptor_;
};

// "" when a beacon listens at `address` ("host:port", as address() gives
// it), else why not, within `timeout`.
std::string probe_liveness(const std::string& address, std::chrono::milliseconds timeout);

}  // namespace weir
