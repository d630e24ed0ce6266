#include "passes/memory/recompute_choice.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "core/dtype.h"
#include "passes/analysis/flop_estimate.h"
#include "passes/graph_match.h"
#include "passes/memory/recompute.h"

namespace weir {

namespace {

// What recomputing costs for a given kept set, by the rules of
// apply_recompute (passes/memory/recompute.cc): a backward reader of a
// forward value that is not available reads a clone, whose inputs are
// cloned in turn unless available; a view of an available value is
// available.
class CloneModel {
 public:
  CloneModel(const Graph& graph, const std::string& loss_name, const OpRegistry& registry) : registry_(registry) {
    const Value* loss = graph.find_value(loss_name);
    forward_ = nodes_feeding(loss);
    always_kept_.insert(loss);
    for (const Value* out : graph.outputs()) always_kept_.insert(out);
    std::unordered_set<const Value*> seen;
    for (const Node* node : graph.topological_order()) {
      if (forward_.count(node) || !recomputable(*node, registry)) continue;
      for (const Value* input : node->inputs()) {
        if (input == nullptr) continue;
        const Value* base = base_of(input);
        if (base == nullptr) continue;
        reads_.push_back(input);
        if (seen.insert(base).second) saved_.push_back(base);
      }
    }
    // Saved values in forward order: ties in the greedy order go to the earlier one.
    std::unordered_map<const Node*, size_t> position;
    size_t i = 0;
    for (const Node* node : graph.topological_order()) position[node] = i++;
    std::stable_sort(saved_.begin(), saved_.end(),
                     [&](const Value* a, const Value* b) { return position.at(a->producer()) < position.at(b->producer()); });
  }

  // The value whose buffer `value` is (through views), or nullptr when it
  // is available whatever is kept (not computed by a recomputable forward node).
  const Value* base_of(const Value* value) const {
    while (true) {
      const Node* producer = value->producer();
      if (producer == nullptr || !forward_.count(producer) || !recomputable(*producer, registry_) ||
          always_kept_.count(value)) {
        return nullptr;
      }
      if (value->producer_output() == 0 && views_input(*producer, registry_) && producer->input(0) != nullptr) {
        value = producer->input(0);
        continue;
      }
      return value;
    }
  }

  // Forward values some backward node reads (bases of views), in forward order.
  const std::vector<const Value*>& saved() const { return saved_; }

  bool available(const Value* value, const std::unordered_set<const Value*>& kept) const {
    const Value* base = base_of(value);
    return base == nullptr || kept.count(base) != 0;
  }

  // Adds to `cloned` what recomputing `value` clones beyond it; returns their FLOPs.
  int64_t clone(const Value* value, const std::unordered_set<const Value*>& kept, std::unordered_set<const Node*>& cloned) const {
    return walk(value, kept, nullptr, cloned);
  }

  // What clone() would add to `cloned`, without adding it.
  int64_t added_flops(const Value* value, const std::unordered_set<const Value*>& kept,
                      const std::unordered_set<const Node*>& cloned) const {
    std::unordered_set<const Node*> added;
    return walk(value, kept, &cloned, added);
  }

  // The FLOPs of every clone for `kept`.
  int64_t flops(const std::unordered_set<const Value*>& kept) const {
    std::unordered_set<const Node*> cloned;
    int64_t total = 0;
    for (const Value* read : reads_) total += clone(read, kept, cloned);
    return total;
  }

 private:
  // The producers recomputing `value` needs, walked back to what `kept`
  // makes available: each not in `already` (when given) and not yet in
  // `added` goes into `added`; returns their FLOPs.
  int64_t walk(const Value* value, const std::unordered_set<const Value*>& kept,
               const std::unordered_set<const Node*>* already, std::unordered_set<const Node*>& added) const {
    int64_t flops = 0;
    std::vector<const Value*> stack = {value};
    while (!stack.empty()) {
      const Value* v = stack.back();
      stack.pop_back();
      if (available(v, kept)) continue;
      const Node* producer = v->producer();
      if ((already != nullptr && already->count(producer)) || !added.insert(producer).second) continue;
      flops += estimated_flops(*producer);
      for (const Value* input : producer->inputs()) {
        if (input != nullptr) stack.push_back(input);
      }
    }
    return flops;
  }

  const OpRegistry& registry_;
  std::unordered_set<const Node*> forward_;
  std::unordered_set<const Value*> always_kept_;
  std::vector<const Value*> reads_;   // forward values backward nodes read (not always available)
  std::vector<const Value*> saved_;
};

double bytes_of(const Value* value) {
  return static_cast<double>(dtype_size(value->type().dtype)) * static_cast<double>(per_example_elements(value->type().shape));
}

// The saved values other than `protect`, in the order the greedy gives them up.
std::vector<const Value*> drop_order(const CloneModel& model, const std::unordered_set<const Value*>& protect) {
  std::vector<const Value*> left;
  for (const Value* v : model.saved()) {
    if (!protect.count(v)) left.push_back(v);
  }
  std::unordered_set<const Value*> kept(model.saved().begin(), model.saved().end());
  kept.insert(protect.begin(), protect.end());
  std::unordered_set<const Node*> cloned;
  std::vector<const Value*> order;
  while (!left.empty()) {
    size_t best = 0;
    double best_ratio = -1;
    for (size_t i = 0; i < left.size(); ++i) {
      kept.erase(left[i]);
      int64_t added = model.added_flops(left[i], kept, cloned);
      kept.insert(left[i]);
      double ratio = bytes_of(left[i]) / (static_cast<double>(added) + 1.0);
      if (ratio > best_ratio) {
        best_ratio = ratio;
        best = i;
      }
    }
    const Value* dropped = left[best];
    kept.erase(dropped);
    model.clone(dropped, kept, cloned);
    order.push_back(dropped);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return order;
}

// Kept values: all saved ones but the first `prefix` of `order`, and `protect`.
std::unordered_set<const Value*> kept_set(const CloneModel& model, const std::unordered_set<const Value*>& protect,
                                          const std::vector<const Value*>& order, size_t prefix) {
  std::unordered_set<const Value*> kept(model.saved().begin(), model.saved().end());
  kept.insert(protect.begin(), protect.end());
  for (size_t i = 0; i < prefix; ++i) kept.erase(order[i]);
  return kept;
}

std::vector<std::string> names_in_order(const std::unordered_set<const Value*>& kept, const Graph& graph) {
  std::vector<std::string> names;
  for (const Node* node : graph.topological_order()) {
    for (const Value* out : node->outputs()) {
      if (out != nullptr && kept.count(out)) names.push_back(out->name());
    }
  }
  return names;
}

}  // namespace

RecomputeSearch choose_checkpoints(const Graph& graph, const std::string& loss, int64_t budget,
                                   const RecomputeEvaluator& evaluate, const OpRegistry& registry, bool segments_only) {
  RecomputeSearch search;
  CloneModel model(graph, loss, registry);
  const std::vector<std::string> candidates = recompute_candidates(graph, loss);
  const int m = static_cast<int>(candidates.size());
  // Segment counts from the most (all candidates kept) down: a geometric
  // spread (each about 12% below the last), dense where the segments'
  // lowest peaks are (about √m); the segment choice alone tries up to 64.
  std::vector<int> counts;
  if (segments_only) {
    const int step = std::max(1, (m + 1) / 64);
    for (int k = m + 1; k >= 1; k -= step) counts.push_back(k);
  } else {
    for (int k = m + 1; k >= 1; k = std::min(k - 1, static_cast<int>(k / 1.12))) counts.push_back(k);
  }
  if (counts.back() != 1) counts.push_back(1);
  counts.push_back(std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(m))))));
  std::sort(counts.begin(), counts.end(), std::greater<>());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());

  auto run = [&](const std::unordered_set<const Value*>& kept) {
    RecomputeTrial trial = evaluate(names_in_order(kept, graph));
    ++search.evaluations;
    if (search.evaluations == 1 || trial.peak < search.lowest.peak) search.lowest = trial;
    return trial;
  };
  for (int k : counts) {
    std::unordered_set<const Value*> protect;
    for (const std::string& name : evenly_spaced_checkpoints(candidates, k)) {
      const Value* base = model.base_of(graph.find_value(name));
      if (base != nullptr) protect.insert(base);
    }
    if (segments_only) {
      // Only the protected candidates kept: every saved value between them recomputed.
      RecomputeTrial trial = run(protect);
      if (trial.peak <= budget && (!search.fits || trial.flops < search.best.flops)) {
        search.best = std::move(trial);
        search.fits = true;
      }
      continue;
    }
    const std::vector<const Value*> order = drop_order(model, protect);
    auto flops_at = [&](size_t prefix) { return model.flops(kept_set(model, protect, order, prefix)); };
    // The longest prefix still cheaper than the best so far (FLOPs grow with the prefix).
    size_t longest = order.size();
    if (search.fits && flops_at(longest) >= search.best.flops) {
      size_t lo = 0, hi = order.size();  // flops_at(lo) < best <= flops_at(hi)
      if (flops_at(0) >= search.best.flops) continue;
      while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        (flops_at(mid) < search.best.flops ? lo : hi) = mid;
      }
      longest = lo;
    }
    RecomputeTrial fitting = run(kept_set(model, protect, order, longest));
    if (fitting.peak > budget) continue;
    // Bisection down to the shortest prefix that fits (the peak falls,
    // roughly, as the prefix grows; only evaluated sets are answers).
    size_t lo = 0, hi = longest;
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      RecomputeTrial trial = run(kept_set(model, protect, order, mid));
      if (trial.peak <= budget) {
        hi = mid;
        fitting = std::move(trial);
      } else {
        lo = mid;
      }
    }
    if (!search.fits || fitting.flops < search.best.flops) {
      search.best = std::move(fitting);
      search.fits = true;
    }
  }
  return search;
}

}  // namespace weir
