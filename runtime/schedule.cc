#include "runtime/schedule.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <unordered_map>

#include "core/collective_group.h"
#include "core/error.h"
#include "runtime/host_fallback.h"

namespace weir {

namespace {

// The backend stream a schedule stream named `name` on `device` runs on
// (StreamInfo::id), given the streams made so far.
StreamId backend_stream_of(const std::string& name, const Device& device, const std::vector<StreamInfo>& streams) {
  if (name == kComputeStream) return {StreamKind::kCompute, 0};
  try {
    return StreamId::parse(name);
  } catch (const Error&) {
  }
  int next = 1;
  for (const StreamInfo& stream : streams) {
    if (stream.device == device && stream.id.kind == StreamKind::kCompute) next = std::max(next, stream.id.index + 1);
  }
  return {StreamKind::kCompute, next};
}

bool is_collective(const Node* node, const OpRegistry& registry) {
  const OpSchema* schema = registry.find(node->op_type(), node->domain());
  return schema != nullptr && schema->has(OpTrait::kCollective);
}

std::string effective_tag(const Node* node) {
  std::string tag = node->has_attr("tag") ? node->attr("tag").s() : "";
  return tag.empty() ? node->op_type() : tag;
}

std::vector<int64_t> group_of(const Node* node) {
  return node->has_attr("group") ? node->attr("group").ints() : std::vector<int64_t>{};
}

int rank_of(const std::vector<Device>& devices, const Device& device) {
  auto it = std::find(devices.begin(), devices.end(), device);
  return it == devices.end() ? -1 : static_cast<int>(it - devices.begin());
}

std::string join_ranks(const std::vector<int64_t>& ranks) {
  std::string text;
  for (int64_t r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

// A collective round: the nodes on different devices that meet in one call.
struct Round {
  std::string description;
  std::vector<int> members;         // indices into the base order
  std::vector<int> expected_ranks;  // world ranks that must take part
};

// Groups the collective nodes into rounds, matching them the way the
// communicators do at run time: the k-th call with one tag in one group on
// every rank (point to point: the k-th send on a channel with the k-th receive).
std::vector<Round> match_rounds(const std::vector<Node*>& base, const std::vector<Device>& devices,
                                const OpRegistry& registry) {
  std::map<std::string, Round> rounds;
  std::map<std::pair<int, std::string>, int> counts;  // (rank, key) -> calls so far
  for (size_t i = 0; i < base.size(); ++i) {
    Node* node = base[i];
    if (!is_collective(node, registry)) continue;
    int rank = rank_of(devices, *node->device());
    for (int64_t r : group_of(node)) {
      if (r < 0 || r >= static_cast<int64_t>(devices.size())) {
        throw Error(ErrorKind::kInvalidGraph, node->op_type() + " '" + node->name() + "': group rank " +
                                                  std::to_string(r) + " is not one of the plan's " +
                                                  std::to_string(devices.size()) + " devices")
            .with_node(node->name());
      }
    }
    // The ranks this device's call meets (core/collective_group.h; throws
    // naming the node when the device is in none of its groups).
    const std::vector<int64_t> group = collective_group(*node, rank, static_cast<int64_t>(devices.size()));
    auto world = [&](int64_t r) -> int64_t {
      if (r < 0 || r >= static_cast<int64_t>(group.size())) {
        throw Error(ErrorKind::kInvalidGraph, node->op_type() + " '" + node->name() + "': peer " +
                                                  std::to_string(r) + " is not a rank of its group [" +
                                                  join_ranks(group) + "]")
            .with_node(node->name());
      }
      return group[r];
    };
    std::vector<int> expected(group.begin(), group.end());
    std::string key = "[" + join_ranks(group) + "] " + effective_tag(node);
    if (node->op_type() == "Send" || node->op_type() == "Recv") {
      int64_t peer = world(node->attr("peer").i());
      bool sending = node->op_type() == "Send";
      int64_t src = sending ? rank : peer, dst = sending ? peer : rank;
      key += " " + std::to_string(src) + "->" + std::to_string(dst);
      expected = {static_cast<int>(src), static_cast<int>(dst)};
    }
    int call = counts[{rank, key}]++;
    std::string round_key = key + " #" + std::to_string(call);
    Round& round = rounds[round_key];
    round.description = "tag '" + effective_tag(node) + "' call " + std::to_string(call + 1);
    round.members.push_back(static_cast<int>(i));
    round.expected_ranks = expected;
  }
  std::vector<Round> result;
  for (auto& [key, round] : rounds) {
    std::set<int> present;
    for (int m : round.members) present.insert(rank_of(devices, *base[m]->device()));
    std::string missing;
    for (int r : round.expected_ranks) {
      if (!present.count(r)) missing += (missing.empty() ? "" : ", ") + devices[r].to_string();
    }
    if (!missing.empty()) {
      Node* first = base[round.members.front()];
      throw Error(ErrorKind::kInvalidGraph, first->op_type() + " '" + first->name() + "' (" + round.description +
                                                ") has no counterpart on " + missing +
                                                ": every device of its group must run the same collectives")
          .with_node(first->name());
    }
    result.push_back(std::move(round));
  }
  return result;
}

std::vector<int> predecessors_in_graph(const Node* node, const std::unordered_map<const Node*, int>& index) {
  std::vector<int> preds;
  for (const Value* input : node->inputs()) {
    if (input != nullptr && input->producer() != nullptr) preds.push_back(index.at(input->producer()));
  }
  for (const Node* control : node->control_inputs()) preds.push_back(index.at(control));
  std::sort(preds.begin(), preds.end());
  preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
  return preds;
}

// The global order: a topological order of the graph with each collective
// round contracted to one unit, ties broken by the base order.
std::vector<Node*> global_order(const std::vector<Node*>& base, const std::vector<Round>& rounds) {
  const int n = static_cast<int>(base.size());
  std::vector<int> unit(n);
  std::iota(unit.begin(), unit.end(), 0);
  for (const Round& round : rounds) {
    for (int m : round.members) unit[m] = round.members.front();
  }
  std::unordered_map<const Node*, int> index;
  for (int i = 0; i < n; ++i) index[base[i]] = i;
  std::vector<std::set<int>> out_edges(n);
  std::vector<int> in_degree(n, 0);
  std::vector<std::vector<int>> members(n);
  for (int i = 0; i < n; ++i) members[unit[i]].push_back(i);
  for (int i = 0; i < n; ++i) {
    for (int p : predecessors_in_graph(base[i], index)) {
      int from = unit[p], to = unit[i];
      if (from != to && out_edges[from].insert(to).second) ++in_degree[to];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int u = 0; u < n; ++u) {
    if (!members[u].empty() && in_degree[u] == 0) ready.push(u);
  }
  std::vector<Node*> order;
  while (!ready.empty()) {
    int u = ready.top();
    ready.pop();
    for (int m : members[u]) order.push_back(base[m]);
    for (int v : out_edges[u]) {
      if (--in_degree[v] == 0) ready.push(v);
    }
  }
  if (order.size() != base.size()) {
    std::string stuck;
    for (const Round& round : rounds) {
      if (in_degree[round.members.front()] > 0) {
        for (int m : round.members) {
          stuck += (stuck.empty() ? "" : ", ") + base[m]->name() + " (" + base[m]->device()->to_string() + ")";
        }
      }
    }
    throw Error(ErrorKind::kInvalidGraph,
                "the collectives cannot run in the same order on every device, so the plan would deadlock: " +
                    stuck);
  }
  return order;
}

}  // namespace

int Schedule::step_of(const Node* node) const {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].node == node) return static_cast<int>(i);
  }
  return -1;
}

Schedule build_schedule(const Graph& graph, const std::vector<Device>& devices, const OpRegistry& registry,
                        const std::vector<Node*>* order) {
  std::vector<Node*> base = graph.topological_order();
  for (Node* node : base) {
    if (!node->device() || rank_of(devices, *node->device()) < 0) {
      throw Error(ErrorKind::kInvalidGraph, "node '" + node->name() + "' is not placed on one of the plan's devices")
          .with_node(node->name());
    }
  }
  std::vector<Node*> global;
  if (order != nullptr) {
    global = *order;
    if (global.size() != base.size()) {
      throw Error(ErrorKind::kInvalidGraph, "a schedule of " + std::to_string(global.size()) + " steps for a graph of " +
                                                std::to_string(base.size()) + " nodes");
    }
  } else {
    // A plan of one device is one program (a lone session, or one rank of a
    // world): its collectives meet other ranks' programs, which are checked
    // against it at session start (runtime/collective_check.h), not here.
    // The host a GPU plan falls back on is no rank (runtime/host_fallback.h).
    const std::vector<Device> ranks(devices.begin(), devices.begin() + static_cast<std::ptrdiff_t>(rank_devices(devices)));
    for (Node* node : base) {
      if (is_collective(node, registry) && rank_of(ranks, *node->device()) < 0) {
        throw Error(ErrorKind::kInvalidGraph, node->op_type() + " '" + node->name() + "' is a collective on " +
                                                  node->device()->to_string() + ", which runs the nodes the plan's " +
                                                  "GPUs fall back on and is not a rank")
            .with_node(node->name());
      }
    }
    global = global_order(base, ranks.size() > 1 ? match_rounds(base, ranks, registry) : std::vector<Round>{});
  }

  Schedule schedule;
  std::unordered_map<const Node*, int> index;
  for (size_t i = 0; i < global.size(); ++i) index[global[i]] = static_cast<int>(i);
  std::map<std::pair<std::string, std::string>, int> stream_index;
  for (size_t i = 0; i < global.size(); ++i) {
    Node* node = global[i];
    bool collective = is_collective(node, registry);
    schedule.has_collectives = schedule.has_collectives || collective;
    std::string name = node->stream();
    if (name.empty()) name = collective ? kCommStream : kComputeStream;
    if (collective && name == kComputeStream) {
      // A collective blocks until its peers arrive; on the compute stream it
      // would hold a thread the peers' computation needs.
      throw Error(ErrorKind::kInvalidGraph, node->op_type() + " '" + node->name() +
                                                "' is a collective and cannot run on the compute stream; give it "
                                                "a communication stream (the default, \"comm\")")
          .with_node(node->name());
    }
    auto key = std::make_pair(node->device()->to_string(), name);
    auto [it, inserted] = stream_index.emplace(key, static_cast<int>(schedule.streams.size()));
    if (inserted) {
      schedule.streams.push_back({*node->device(), name, backend_stream_of(name, *node->device(), schedule.streams),
                                  name != kComputeStream, {}});
    }
    ScheduleStep step;
    step.node = node;
    step.device = *node->device();
    step.device_index = rank_of(devices, step.device);
    step.collective = collective;
    const OpSchema* schema = registry.find(node->op_type(), node->domain());
    step.output_views_input = schema != nullptr && schema->has(OpTrait::kViewOfInput);
    step.stream = it->second;
    step.predecessors = predecessors_in_graph(node, index);
    for (int p : step.predecessors) {
      if (p >= static_cast<int>(i)) {
        throw Error(ErrorKind::kInvalidGraph, "schedule runs node '" + node->name() + "' before its input from '" +
                                                  global[p]->name() + "'")
            .with_node(node->name());
      }
    }
    StreamInfo& stream = schedule.streams[step.stream];
    if (stream.in_order && !stream.steps.empty()) {
      int previous = stream.steps.back();
      if (!std::binary_search(step.predecessors.begin(), step.predecessors.end(), previous)) {
        step.predecessors.insert(std::upper_bound(step.predecessors.begin(), step.predecessors.end(), previous),
                                 previous);
      }
    }
    stream.steps.push_back(static_cast<int>(i));
    schedule.steps.push_back(std::move(step));
  }
  const size_t n = schedule.steps.size();
  const size_t words = (n + 63) / 64;
  schedule.ancestors.assign(n, std::vector<uint64_t>(words, 0));
  for (size_t i = 0; i < n; ++i) {
    for (int p : schedule.steps[i].predecessors) {
      schedule.steps[p].successors.push_back(static_cast<int>(i));
      std::vector<uint64_t>& mine = schedule.ancestors[i];
      const std::vector<uint64_t>& theirs = schedule.ancestors[p];
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[static_cast<size_t>(p) / 64] |= uint64_t{1} << (p % 64);
    }
  }
  return schedule;
}

}  // namespace weir
