// ParameterServer — one server of a parameter-server job: it holds this
// server's part of every table (sparse shards s with s % servers == index,
// and a slice of each dense table) and answers workers over gRPC
// (distributed/ps/ps.proto). `graph-runner ps-server --port P` runs one.
//
//   weir::ps::ParameterServer server({.port = 0});   // listening when constructed
//   server.endpoint();                               // "127.0.0.1:41235"
//   server.wait();                                   // until a client's stop() or shutdown()
//
// Handlers run on gRPC's thread pool; tables lock per shard (sparse) or per
// slice (dense), so requests for different shards proceed together. A
// synchronous table's pull waits for the round before it (sync_rounds.h) at
// most until the client's deadline or wait_limit, whichever is sooner.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace weir::ps {

struct ParameterServerOptions {
  std::string host = "127.0.0.1";   // "0.0.0.0" to serve other machines
  int port = 0;                     // 0: a free port (port() says which)
  std::chrono::milliseconds wait_limit{std::chrono::minutes(5)};
};

class ParameterServer {
 public:
  // Listening on return; throws kIo naming the address when it cannot bind.
  explicit ParameterServer(ParameterServerOptions options);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  int port() const;
  std::string endpoint() const;   // host:port

  // Blocks until a client asked the server to stop, or shutdown().
  void wait();
  // Stops answering (calls in flight finish or are cancelled).
  void shutdown();

  // Rows held by sparse table `name` on this server (tests, logs); -1 when
  // there is no such sparse table.
  int64_t sparse_rows(const std::string& name) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::ps
