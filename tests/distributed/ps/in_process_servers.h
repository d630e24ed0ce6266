// Parameter servers in the test's own process, each on a free port of
// 127.0.0.1, and gRPC clients of all of them: what the parameter-server
// tests train and communicate through.
//
//   weir::ps::InProcessServers servers(2);
//   std::shared_ptr<weir::ParameterClient> worker0 = servers.client(0);
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distributed/ps/grpc_parameter_client.h"
#include "distributed/ps/parameter_server.h"

namespace weir::ps {

struct InProcessServers {
  explicit InProcessServers(int count) {
    for (int s = 0; s < count; ++s) servers.push_back(std::make_unique<ParameterServer>(ParameterServerOptions{}));
  }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> list;
    for (const auto& server : servers) list.push_back(server->endpoint());
    return list;
  }
  std::shared_ptr<ParameterClient> client(int worker = 0,
                                          std::chrono::milliseconds call_timeout = std::chrono::seconds(20)) const {
    return connect_parameter_servers({.endpoints = endpoints(), .worker = worker,
                                      .connect_timeout = std::chrono::seconds(10), .call_timeout = call_timeout});
  }
  std::vector<std::unique_ptr<ParameterServer>> servers;
};

}  // namespace weir::ps
