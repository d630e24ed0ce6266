// What the parameter server and its client share about the wire
// (ps.proto): table configurations to and from messages, weir::Error to and
// from gRPC status codes, floats to and from bytes. Internal to
// distributed/ps/.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/parameter_client.h"
#include "distributed/ps/ps.pb.h"

namespace weir::ps {

void to_message(const ParameterTableConfig& config, wire::TableConfig& message);
ParameterTableConfig from_message(const wire::TableConfig& message);
// The first field in which two configurations differ ("width 16 vs 8"), or "".
std::string config_difference(const ParameterTableConfig& a, const ParameterTableConfig& b);

// A server handler's failure as a status whose code keeps the error's kind.
grpc::Status to_status(const Error& error);
// A failed call's status as the error the client throws; the message names
// the server (`who`) and what was asked (`call`).
Error from_status(const grpc::Status& status, const std::string& who, const std::string& call);

inline std::string float_bytes(const float* values, int64_t n) {
  return std::string(reinterpret_cast<const char*>(values), static_cast<size_t>(n) * sizeof(float));
}

// Options every channel and the server take: messages of any size (a
// pull of 10^6 rows is more than gRPC's 4 MB default).
grpc::ChannelArguments channel_arguments();

// Sends gRPC's own log lines to Weir's logger at debug level (once per
// process): the failures they describe reach the user as Weir's errors,
// which name the server and the call.
void route_grpc_logs();

}  // namespace weir::ps
