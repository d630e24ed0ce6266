#include "runtime/profiler.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "core/atomic_file.h"

namespace weir {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string microseconds(int64_t ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", static_cast<double>(ns) / 1000.0);
  return buffer;
}

}  // namespace

Profiler::Profiler() : origin_ns_(steady_ns()) {}

int64_t Profiler::now_ns() const { return steady_ns() - origin_ns_; }

void Profiler::record(ProfileEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

std::vector<ProfileEvent> Profiler::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

void Profiler::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
}

std::string Profiler::chrome_trace_json() const {
  std::vector<ProfileEvent> events = this->events();
  std::map<std::string, int> pids;
  std::map<std::pair<int, std::string>, int> tids;
  for (const ProfileEvent& e : events) {
    int pid = pids.emplace(e.device, static_cast<int>(pids.size())).first->second;
    tids.emplace(std::make_pair(pid, e.track), static_cast<int>(tids.size()));
  }
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto add = [&](const std::string& line) {
    out += (first ? "" : ",\n") + line;
    first = false;
  };
  for (const auto& [device, pid] : pids) {
    add("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) + ",\"args\":{\"name\":" +
        json_string(device) + "}}");
  }
  for (const auto& [key, tid] : tids) {
    add("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(key.first) + ",\"tid\":" +
        std::to_string(tid) + ",\"args\":{\"name\":" + json_string(key.second) + "}}");
  }
  for (const ProfileEvent& e : events) {
    int pid = pids.at(e.device);
    int tid = tids.at({pid, e.track});
    add("{\"ph\":\"X\",\"name\":" + json_string(e.name) + ",\"cat\":" + json_string(e.op_type) +
        ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" +
        microseconds(e.start_ns) + ",\"dur\":" + microseconds(e.duration_ns) + ",\"args\":{\"op\":" +
        json_string(e.op_type) + ",\"device\":" + json_string(e.device) + ",\"stream\":" + json_string(e.stream) +
        ",\"bytes\":" + std::to_string(e.bytes) + "}}");
  }
  out += "\n]}\n";
  return out;
}

void Profiler::write_chrome_trace(const std::filesystem::path& path) const {
  write_file_atomically(path, chrome_trace_json());
}

}  // namespace weir
