// Profiler — one event per node run, written as a Chrome / Perfetto trace.
//
//   weir::Profiler profiler;
//   weir::RunOptions options;
//   options.profiler = &profiler;
//   session.run(feeds, options);
//   profiler.write_chrome_trace("trace.json");   // open in ui.perfetto.dev or chrome://tracing
//
// In the trace each device is a process and each track a thread: the
// compute stream's threads ("compute #0", ...) and each communication stream
// ("comm") on its own track, so overlap of communication with computation is
// visible. Every event carries the node name, op type, device, stream and
// the bytes of its outputs. Thread-safe; events from several runs accumulate.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace weir {

struct ProfileEvent {
  std::string name;      // the node
  std::string op_type;
  std::string device;    // "cpu:1"
  std::string stream;    // "compute", "comm", ...
  std::string track;     // the trace thread: "compute #0", "comm"
  int64_t start_ns = 0;  // since the profiler was created
  int64_t duration_ns = 0;
  int64_t bytes = 0;     // bytes of the outputs
};

class Profiler {
 public:
  Profiler();

  // Nanoseconds since this profiler was created.
  int64_t now_ns() const;
  void record(ProfileEvent event);
  std::vector<ProfileEvent> events() const;
  void clear();

  std::string chrome_trace_json() const;
  // Written to a temporary file and renamed, so a reader never sees half a trace.
  void write_chrome_trace(const std::filesystem::path& path) const;

 private:
  int64_t origin_ns_;
  mutable std::mutex mutex_;
  std::vector<ProfileEvent> events_;
};

}  // namespace weir
