// The automatic checkpoint choice of recompute (passes/memory/recompute.h):
// the cheapest set of kept forward values, in recomputed FLOPs, whose
// estimated peak fits a memory budget.
//
//   weir::RecomputeSearch search = weir::choose_checkpoints(graph, "loss", budget, evaluate, registry);
//   if (search.fits) use(search.best.checkpoints); else refuse(search.lowest.peak);
//
// A forward value that a backward node reads (through views: a view of a
// kept value costs nothing) is either kept or recomputed. Two levels:
//  - segments: the articulation candidates (recompute_candidates) every
//    ⌊m/k⌋-th of which is always kept, for a spread of segment counts k.
//    They bound what a chain of clones recomputes at once (its memory);
//  - inside them, a greedy order in which the other kept values are given
//    up: at each step the one that frees the most bytes per FLOP it adds to
//    the recomputation (the closure of clones it needs, counting nodes
//    already cloned once). Elementwise ops, softmax, layer norms, views and
//    dropout masks go first, matmul and conv outputs last: Korthikanti et
//    al.'s selective recomputation (2022), found by the costs.
// A prefix of that order is a checkpoint set; its FLOPs are counted exactly
// by simulating the clones (FLOPs grow with the prefix), its peak by the
// caller's `evaluate` (the memory planner; slow, so called a bounded number
// of times): for each k, one evaluation at the longest prefix still
// cheaper than the best so far, and when that fits, bisection down to the
// shortest prefix that fits. The answer is always an evaluated set.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/op_schema.h"

namespace weir {

// One evaluated checkpoint set: apply_recompute on a copy of the graph, then
// the peak estimate.
struct RecomputeTrial {
  std::vector<std::string> checkpoints{};
  int64_t peak = 0;
  int64_t flops = 0;  // of the cloned nodes (passes/analysis/flop_estimate.h)
  int cloned = 0;
};
using RecomputeEvaluator = std::function<RecomputeTrial(const std::vector<std::string>& checkpoints)>;

struct RecomputeSearch {
  bool fits = false;
  RecomputeTrial best{};    // the fewest recomputed FLOPs among the sets that fit (when fits)
  RecomputeTrial lowest{};  // the lowest peak evaluated
  int evaluations = 0;
};

// Searches as the header comment says. `graph` is not changed.
// `segments_only`: the choice before this search, kept for comparison:
// only the protected candidates are kept, for a spread of up to 64 segment
// counts, and nothing between them.
RecomputeSearch choose_checkpoints(const Graph& graph, const std::string& loss, int64_t budget,
                                   const RecomputeEvaluator& evaluate, const OpRegistry& registry,
                                   bool segments_only = false);

}  // namespace weir
