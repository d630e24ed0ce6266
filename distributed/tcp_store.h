// A key-value store over TCP for rendezvous between hosts without a shared
// filesystem: rank 0 serves it (TcpStoreServer) on the master address, and
// every rank (rank 0 too) is a client (TcpStore). Gloo has no TCP store
// (../shared/DISTRIBUTED.md §1); this one is the minimum rendezvous needs.
//
//   weir::TcpStoreServer server(29500);                 // rank 0; 0: any free port
//   weir::TcpStore store("10.0.0.1", 29500, std::chrono::seconds(30));
//   store.set("job/rank0", "10.0.0.1:41000");
//   std::string peer = store.get("job/rank1");            // waits until it is set
//   int64_t arrived = store.add("job/arrived", 1);
//
// Every call has a timeout; a client that cannot reach the server, or a
// key that is not set in time, is weir::Error(kCommunication) naming the
// address (and the keys). Requests are small length-prefixed messages
// (operation, key, value) answered in order on one connection per client.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weir {

class TcpStoreServer {
 public:
  // Listens on `port` of every interface (0: a free port); serves from a
  // thread of its own until destroyed. Throws kCommunication naming the
  // port when it cannot listen (in use).
  explicit TcpStoreServer(int port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }

 private:
  void serve();

  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  int port_ = 0;
  std::thread thread_;
};

class TcpStore {
 public:
  // Connects to the server at host:port, retrying until `timeout` (the
  // server may start after this rank); `timeout` is also every call's.
  TcpStore(std::string host, int port, std::chrono::milliseconds timeout);
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value);
  // The value of `key`, waiting until some client sets it.
  std::string get(const std::string& key);
  // Adds `delta` to the integer at `key` (0 when unset) and returns the sum.
  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::string& key);
  // Returns once every key is set; throws naming the missing ones after `timeout`.
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const { return timeout_; }
  // "host:port", for messages.
  std::string address() const;

 private:
  // One request and its reply: the status byte and the value.
  std::pair<uint8_t, std::string> request(uint8_t op, const std::string& key, const std::string& value);

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace weir
