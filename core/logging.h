// Weir's log, through spdlog.
//
// One named logger ("weir") writes to stderr. Library code logs through it;
// the level is set once at the edge (a CLI flag, or WEIR_LOG_LEVEL read by
// init_logging_from_env() in main), never read deep inside the library.
//
//   weir::init_logging_from_env();           // in main()
//   weir::logger().info("loaded {} nodes", graph.num_nodes());
//   weir::set_log_level(spdlog::level::debug);
#pragma once

#include <spdlog/spdlog.h>

namespace weir {

spdlog::logger& logger();
void set_log_level(spdlog::level::level_enum level);
// Reads WEIR_LOG_LEVEL (trace, debug, info, warn, error, critical, off).
// An unknown value is reported with a warning and ignored.
void init_logging_from_env();

}  // namespace weir
