// The ParameterClient (core/parameter_client.h) of a worker, over gRPC to
// the job's parameter servers (parameter_server.h).
//
//   auto client = weir::ps::connect_parameter_servers({.endpoints = {"127.0.0.1:7000", "127.0.0.1:7001"},
//                                                      .worker = 0});
//   client->create_table(config);
//
// Sparse ids go to the server of their shard (sparse_shard_of(id) %
// servers), each server's ids once; a dense table's slices go to their
// servers. A call to several servers sends to all at once and waits for
// every answer. Every call has a deadline: a server that died or stopped
// answering fails the call with kCommunication naming its address.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/parameter_client.h"

namespace weir::ps {

struct ParameterClientOptions {
  std::vector<std::string> endpoints;   // host:port of each server, in server order
  int worker = 0;                       // this worker's index (synchronous rounds name it)
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};   // servers may still be starting
  std::chrono::milliseconds call_timeout{std::chrono::minutes(5)};       // a synchronous pull waits for the slowest worker
};

// Connects to every server (waiting up to connect_timeout for each); throws
// kCommunication naming the first one it could not reach.
std::shared_ptr<ParameterClient> connect_parameter_servers(const ParameterClientOptions& options);

// "127.0.0.1:7000,127.0.0.1:7001" (WEIR_SERVER_ENDPOINTS) as endpoints;
// throws kInvalidArgument naming an entry that is not host:port.
std::vector<std::string> parse_server_endpoints(const std::string& list);

}  // namespace weir::ps
