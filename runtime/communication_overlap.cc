#include "runtime/communication_overlap.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace weir {

namespace {

bool is_communication(const ProfileEvent& event) {
  return event.stream == "comm" || event.stream.starts_with("comm:");
}

// Sorted, disjoint [start, end) intervals covering `intervals`.
std::vector<std::pair<int64_t, int64_t>> merged(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& interval : intervals) {
    if (!out.empty() && interval.first <= out.back().second) {
      out.back().second = std::max(out.back().second, interval.second);
    } else {
      out.push_back(interval);
    }
  }
  return out;
}

}  // namespace

CommunicationOverlap communication_overlap(const std::vector<ProfileEvent>& events) {
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> computing;  // by device
  for (const ProfileEvent& event : events) {
    if (!is_communication(event)) computing[event.device].emplace_back(event.start_ns, event.start_ns + event.duration_ns);
  }
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> busy;
  for (auto& [device, intervals] : computing) busy[device] = merged(std::move(intervals));

  CommunicationOverlap overlap;
  for (const ProfileEvent& event : events) {
    if (!is_communication(event)) continue;
    ++overlap.events;
    overlap.communication_ns += event.duration_ns;
    const int64_t begin = event.start_ns, end = event.start_ns + event.duration_ns;
    const auto found = busy.find(event.device);
    if (found == busy.end()) continue;
    const std::vector<std::pair<int64_t, int64_t>>& intervals = found->second;
    // The first interval that ends after `begin`, then every one that starts before `end`.
    auto it = std::upper_bound(intervals.begin(), intervals.end(), begin,
                               [](int64_t t, const std::pair<int64_t, int64_t>& interval) { return t < interval.second; });
    for (; it != intervals.end() && it->first < end; ++it) {
      overlap.overlapped_ns += std::min(end, it->second) - std::max(begin, it->first);
    }
  }
  return overlap;
}

}  // namespace weir
