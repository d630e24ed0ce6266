#include "core/collective_group.h"

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "core/graph.h"

namespace weir {

namespace {

std::string join(const std::vector<int64_t>& ranks) {
  std::string text;
  for (int64_t r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return "[" + text + "]";
}

}  // namespace

std::vector<int64_t> collective_group(const Node& node, int64_t rank, int64_t world_size) {
  auto refuse = [&](const std::string& why) {
    return Error(ErrorKind::kInvalidGraph, node.op_type() + " '" + node.name() + "': " + why).with_node(node.name());
  };
  const std::vector<int64_t> group = node.has_attr("group") ? node.attr("group").ints() : std::vector<int64_t>{};
  const int64_t run = node.has_attr("group_size") ? node.attr("group_size").i() : 0;
  if (group.empty()) {
    if (run > 0) throw refuse("group_size " + std::to_string(run) + " needs the ranks to partition in 'group'");
    std::vector<int64_t> world(static_cast<size_t>(world_size));
    for (int64_t r = 0; r < world_size; ++r) world[static_cast<size_t>(r)] = r;
    return world;
  }
  std::set<int64_t> seen;
  for (int64_t member : group) {
    if (member < 0 || member >= world_size) {
      throw refuse("group rank " + std::to_string(member) + " is not a rank of a world of " + std::to_string(world_size));
    }
    if (!seen.insert(member).second) throw refuse("rank " + std::to_string(member) + " is listed twice in its group " + join(group));
  }
  if (run < 0) throw refuse("group_size must be positive, got " + std::to_string(run));
  const int64_t length = static_cast<int64_t>(group.size());
  if (run == 0 || run == length) {
    if (!seen.count(rank)) throw refuse("runs on rank " + std::to_string(rank) + ", which is not in its group " + join(group));
    return group;
  }
  if (length % run != 0) {
    throw refuse("group " + join(group) + " of " + std::to_string(length) + " ranks does not split into groups of " +
                 std::to_string(run));
  }
  auto found = std::find(group.begin(), group.end(), rank);
  if (found == group.end()) {
    throw refuse("runs on rank " + std::to_string(rank) + ", which is in none of its groups " + join(group) + " (runs of " +
                 std::to_string(run) + ")");
  }
  const int64_t first = (found - group.begin()) / run * run;
  return std::vector<int64_t>(group.begin() + first, group.begin() + first + run);
}

int64_t collective_group_size(const Node& node) {
  const int64_t run = node.has_attr("group_size") ? node.attr("group_size").i() : 0;
  if (run > 0) return run;
  return node.has_attr("group") ? static_cast<int64_t>(node.attr("group").ints().size()) : 0;
}

}  // namespace weir
