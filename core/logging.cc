#include "core/logging.h"

#include <cstdlib>
#include <memory>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace weir {

spdlog::logger& logger() {
  // Created on first use; spdlog's registry makes the creation thread-safe
  // and returns the same logger to every caller afterwards.
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto existing = spdlog::get("weir");
    if (existing) return existing;
    auto created = spdlog::stderr_color_mt("weir");
    created->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [weir] [%^%l%$] %v");
    created->set_level(spdlog::level::warn);
    return created;
  }();
  return *instance;
}

void set_log_level(spdlog::level::level_enum level) { logger().set_level(level); }

void init_logging_from_env() {
  const char* value = std::getenv("WEIR_LOG_LEVEL");
  if (value == nullptr || *value == '\0') return;
  auto level = spdlog::level::from_str(value);
  // from_str maps every unknown name to "off"; only accept "off" when asked.
  if (level == spdlog::level::off && std::string(value) != "off") {
    logger().warn("WEIR_LOG_LEVEL='{}' is not a log level; keeping '{}'", value,
                  spdlog::level::to_string_view(logger().level()));
    return;
  }
  set_log_level(level);
}

}  // namespace weir
