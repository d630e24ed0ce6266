#include "distributed/step_time_estimate.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "core/collective_group.h"
#include "core/error.h"
#include "passes/analysis/flop_estimate.h"

namespace weir {

namespace {

bool is_collective(const Node& node) {
  const std::string& op = node.op_type();
  return node.domain().empty() &&
         (op == "AllReduce" || op == "ReduceScatter" || op == "AllGather" || op == "Broadcast");
}

int64_t static_bytes(const Value* value) {
  if (value == nullptr || !value->shape().is_static()) return 0;
  return value->shape().num_elements() * static_cast<int64_t>(dtype_size(value->dtype()));
}

}  // namespace

int64_t compute_flops(const Graph& graph) {
  int64_t flops = 0;
  for (const Node* node : graph.nodes()) {
    if (!is_collective(*node)) flops += estimated_flops(*node);
  }
  return flops;
}

StepTimeEstimate estimate_step_time(const Graph& graph, const StepTimeOptions& options) {
  if (options.world < 1) {
    throw Error(ErrorKind::kInvalidArgument, "step time estimate: the world needs at least 1 rank, got " +
                                                 std::to_string(options.world));
  }
  if (options.merge_steps < 1) {
    throw Error(ErrorKind::kInvalidArgument, "step time estimate: merge_steps must be at least 1");
  }
  if (!(options.compute_seconds >= 0)) {
    throw Error(ErrorKind::kInvalidArgument, "step time estimate: compute_seconds must be >= 0");
  }
  StepTimeEstimate estimate;
  const std::vector<Node*> order = graph.topological_order();
  estimate.flops = compute_flops(graph);
  estimate.compute_seconds = options.compute_seconds;
  const double seconds_per_flop =
      estimate.flops > 0 ? options.compute_seconds / static_cast<double>(estimate.flops) : 0.0;

  // Event-driven list scheduling: a node joins its lane's queue (first
  // come, first served; ties in topological order) when its last data or
  // control input finishes; each lane runs one node at a time.
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < order.size(); ++i) index[order[i]] = i;
  std::vector<int> waiting(order.size(), 0);
  std::vector<std::vector<size_t>> successors(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    std::vector<size_t> before;
    for (const Value* input : order[i]->inputs()) {
      if (input != nullptr && input->producer() != nullptr) before.push_back(index.at(input->producer()));
    }
    for (const Node* control : order[i]->control_inputs()) before.push_back(index.at(control));
    std::sort(before.begin(), before.end());
    before.erase(std::unique(before.begin(), before.end()), before.end());
    waiting[i] = static_cast<int>(before.size());
    for (size_t b : before) successors[b].push_back(i);
  }
  struct Lane {
    std::deque<size_t> queue;
    bool busy = false;
    size_t node = 0;
    double free_at = 0;
  };
  Lane compute, link;
  std::vector<double> ready_at(order.size(), 0);
  auto enqueue = [&](size_t i, double now) {
    ready_at[i] = now;
    (is_collective(*order[i]) && !options.shared_cores ? link : compute).queue.push_back(i);
  };
  for (size_t i = 0; i < order.size(); ++i) {
    if (waiting[i] == 0) enqueue(i, 0);
  }
  double now = 0;
  size_t done = 0;
  while (done < order.size()) {
    for (Lane* lane : {&compute, &link}) {
      if (lane->busy || lane->queue.empty()) continue;
      const size_t i = lane->queue.front();
      lane->queue.pop_front();
      const Node& node = *order[i];
      double seconds = 0;
      if (is_collective(node)) {
        CollectiveEstimate c;
        c.node = node.name();
        c.op_type = node.op_type();
        c.tag = node.has_attr("tag") ? node.attr("tag").s() : "";
        const int64_t size = collective_group_size(node);
        c.group_size = size == 0 ? options.world : size;
        c.input_bytes = node.num_inputs() > 0 ? static_bytes(node.input(0)) : 0;
        c.cost = collective_cost(c.op_type, c.group_size, c.input_bytes, options.link);
        c.every_step = node.num_inputs() < 2;  // a skip input: gradient merge
        seconds = c.every_step ? c.cost.seconds : c.cost.seconds / options.merge_steps;
        c.ready_seconds = ready_at[i];
        c.start_seconds = now;
        c.end_seconds = now + seconds;
        estimate.communication_seconds += seconds;
        estimate.collectives.push_back(c);
      } else {
        seconds = static_cast<double>(estimated_flops(node)) * seconds_per_flop;
      }
      lane->busy = true;
      lane->node = i;
      lane->free_at = now + seconds;
    }
    // The lane that finishes first (the compute lane on a tie) completes its node.
    Lane* next = nullptr;
    for (Lane* lane : {&compute, &link}) {
      if (lane->busy && (next == nullptr || lane->free_at < next->free_at)) next = lane;
    }
    if (next == nullptr) {
      throw Error(ErrorKind::kInternal, "step time estimate: nodes wait on each other (a cycle)");
    }
    now = next->free_at;
    next->busy = false;
    ++done;
    for (size_t s : successors[next->node]) {
      if (--waiting[s] == 0) enqueue(s, now);
    }
  }
  const double last = now;
  estimate.step_seconds = std::max(last, options.compute_seconds);
  std::stable_sort(estimate.collectives.begin(), estimate.collectives.end(),
                   [](const CollectiveEstimate& a, const CollectiveEstimate& b) { return a.start_seconds < b.start_seconds; });
  return estimate;
}

}  // namespace weir
