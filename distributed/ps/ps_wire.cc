#include "distributed/ps/ps_wire.h"

#include <fmt/format.h>
#include <grpc/support/log.h>

#include <mutex>

#include "core/logging.h"

namespace weir::ps {

void to_message(const ParameterTableConfig& config, wire::TableConfig& message) {
  message.set_name(config.name);
  message.set_sparse(config.sparse);
  message.set_width(config.width);
  message.set_rule(table_rule_name(config.rule));
  message.set_epsilon(config.epsilon);
  message.set_beta1(config.beta1);
  message.set_beta2(config.beta2);
  message.set_init_kind(static_cast<int32_t>(config.init.kind));
  message.set_init_scale(config.init.scale);
  message.set_init_seed(config.init.seed);
  message.set_admit_after(config.admit_after);
  message.set_shard_num(config.shard_num);
  message.set_sync_workers(config.sync_workers);
}

ParameterTableConfig from_message(const wire::TableConfig& message) {
  ParameterTableConfig config;
  config.name = message.name();
  config.sparse = message.sparse();
  config.width = message.width();
  config.rule = parse_table_rule(message.rule());
  config.epsilon = message.epsilon();
  config.beta1 = message.beta1();
  config.beta2 = message.beta2();
  if (message.init_kind() < 0 || message.init_kind() > static_cast<int32_t>(TableInitializer::Kind::kNormal)) {
    throw Error(ErrorKind::kInvalidArgument, "table '" + config.name + "': unknown initializer kind " +
                                                 std::to_string(message.init_kind()));
  }
  config.init.kind = static_cast<TableInitializer::Kind>(message.init_kind());
  config.init.scale = message.init_scale();
  config.init.seed = message.init_seed();
  config.admit_after = message.admit_after();
  config.shard_num = message.shard_num();
  config.sync_workers = message.sync_workers();
  if (config.name.empty() || config.width <= 0 || config.sync_workers < 0 || (config.sparse && config.shard_num <= 0)) {
    throw Error(ErrorKind::kInvalidArgument,
                fmt::format("table '{}' needs a name, a width > 0 (got {}), shard_num > 0 (got {}) and sync_workers >= 0 "
                            "(got {})", config.name, config.width, config.shard_num, config.sync_workers));
  }
  return config;
}

std::string config_difference(const ParameterTableConfig& a, const ParameterTableConfig& b) {
  auto kind = [](bool sparse) { return sparse ? "sparse" : "dense"; };
  if (a.sparse != b.sparse) return fmt::format("kind {} vs {}", kind(a.sparse), kind(b.sparse));
  if (a.width != b.width) return fmt::format("{} {} vs {}", a.sparse ? "row width" : "size", a.width, b.width);
  if (a.rule != b.rule) return fmt::format("rule {} vs {}", table_rule_name(a.rule), table_rule_name(b.rule));
  if (a.epsilon != b.epsilon || a.beta1 != b.beta1 || a.beta2 != b.beta2) return "the rule's epsilon or betas";
  if (a.init.kind != b.init.kind || a.init.scale != b.init.scale || a.init.seed != b.init.seed) return "initializer";
  if (a.admit_after != b.admit_after) return fmt::format("admit_after {} vs {}", a.admit_after, b.admit_after);
  if (a.shard_num != b.shard_num) return fmt::format("shard_num {} vs {}", a.shard_num, b.shard_num);
  if (a.sync_workers != b.sync_workers) return fmt::format("sync_workers {} vs {}", a.sync_workers, b.sync_workers);
  return "";
}

grpc::Status to_status(const Error& error) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (error.kind()) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kShape: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case ErrorKind::kFormat: code = grpc::StatusCode::DATA_LOSS; break;
    case ErrorKind::kIo: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case ErrorKind::kCommunication: code = grpc::StatusCode::ABORTED; break;
    case ErrorKind::kOutOfMemory: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    default: break;
  }
  return grpc::Status(code, error.what());
}

Error from_status(const grpc::Status& status, const std::string& who, const std::string& call) {
  ErrorKind kind = ErrorKind::kInternal;
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND: kind = ErrorKind::kInvalidArgument; break;
    case grpc::StatusCode::DATA_LOSS: kind = ErrorKind::kFormat; break;
    case grpc::StatusCode::FAILED_PRECONDITION: kind = ErrorKind::kIo; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: kind = ErrorKind::kOutOfMemory; break;
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED: kind = ErrorKind::kCommunication; break;
    default: break;
  }
  std::string what = status.error_code() == grpc::StatusCode::UNAVAILABLE ? "unreachable (" + status.error_message() + ")"
                     : status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                         ? "no answer before the deadline (" + status.error_message() + ")"
                         : status.error_message();
  return Error(kind, who + ": " + call + ": " + what);
}

grpc::ChannelArguments channel_arguments() {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  arguments.SetMaxSendMessageSize(-1);
  return arguments;
}

void route_grpc_logs() {
  static std::once_flag once;
  std::call_once(once, [] {
    gpr_set_log_function([](gpr_log_func_args* args) {
      logger().debug("grpc {}:{}: {}", args->file != nullptr ? args->file : "?", args->line,
                     args->message != nullptr ? args->message : "");
    });
  });
}

}  // namespace weir::ps
