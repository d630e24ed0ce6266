// Recompute (gradient checkpointing): trade compute for memory in a
// training graph. Forward activations that the backward pass reads are kept
// only at checkpoints; every other one is freed after its last forward use
// and computed again from the nearest checkpoint just before the backward
// pass needs it.
//
//   weir::RecomputeOptions options{.loss = "loss", .checkpoints = {"block3/out", "block6/out"}};
//   weir::Recompute pass(options);
//   pass.run(training_graph, ctx);       // after minimize(): forward, backward and updates
//
//   options.automatic = true;            // choose the checkpoints
//   options.memory_budget = 512 << 20;   // ... so that the estimated peak fits (default: a third of it without)
//   options.estimate_peak = [](weir::Graph& g) { return ...; };  // the memory planner's peak
//
// The forward graph is what the loss depends on. A backward reader of a
// forward value that is not a checkpoint reads a clone instead; the clone's
// inputs are checkpoints, graph inputs, parameters or constants, or clones
// themselves. Each chain of clones waits (control edges) for the gradients
// its backward readers consume from outside the chain, so it runs when the
// backward pass reaches its segment, not during the forward pass, and the
// memory planner can reuse the forward activations' memory for it. Clones
// that read a parameter run before the parameter's update. Random ops
// replay: Dropout draws from (its seed, the run's RNG counter), so a cloned
// Dropout makes the mask of the original.
//
// Automatic choice (passes/memory/recompute_choice.h has the search): the
// cheapest recompute, in recomputed FLOPs (passes/analysis/flop_estimate.h),
// whose estimated peak fits the memory budget; by default a third of the
// peak without recompute. Any forward value a backward node reads may be
// kept or recomputed: values that are cheap per byte (elementwise ops,
// softmax, GELU, layer norms, dropout masks, transposes) are recomputed
// first, matmul and conv outputs last (selective recomputation), and
// every k-th "articulation" candidate (the only activation alive at its
// point of the forward order: a chain's links, block outputs) is kept so
// that a chain of clones spans a segment, not the whole forward pass. The
// peaks come from `estimate_peak` (the runtime's memory planner), called a
// bounded number of times. An explicit budget that nothing meets throws,
// naming it and the lowest peak reached; the default budget, when nothing
// meets it, gives the lowest peak reached instead. Without an estimator
// the pass keeps every ⌊m/√m⌋-th candidate (√m segments). The pass reports
// what it chose: the kept values, the nodes cloned and their FLOPs against
// the forward pass's, the peaks before and after, and the budget.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace weir {

// The in-order stream apply_recompute() puts the step's nodes on.
inline constexpr const char* kRecomputeStream = "step";

// The automatic choice's budget when none is given: the peak without
// recompute divided by this.
inline constexpr int64_t kDefaultBudgetDivisor = 3;

struct RecomputeOptions {
  std::string loss{};                     // the scalar the forward graph computes
  std::vector<std::string> checkpoints{};  // kept forward values (ignored when automatic)
  bool automatic = false;
  int64_t memory_budget = 0;              // bytes; 0: a third of the peak without recompute. Needs estimate_peak.
  // The peak memory of running a graph (planned arena plus persistent and
  // fed values), from the runtime's memory planner: passes cannot include
  // the runtime, so the caller gives it. It may place the graph.
  std::function<int64_t(Graph&)> estimate_peak{};
  // The automatic choice before budgets, for comparison: only evenly spaced
  // candidates kept, everything between them recomputed; without a budget
  // the lowest peak, under one the fewest FLOPs that fit.
  bool segments_only = false;
};

// Forward values that are the only activation alive at their point of the
// forward order, in that order: the automatic choice picks among these.
std::vector<std::string> recompute_candidates(const Graph& graph, const std::string& loss);

// The candidates that end `segments` even segments of `candidates`.
std::vector<std::string> evenly_spaced_checkpoints(const std::vector<std::string>& candidates, int segments);

// Whether recompute may clone `node`: not communication, not a write to
// persistent state (those must happen once per step).
bool recomputable(const Node& node, const OpRegistry& registry);
// Whether `node`'s output 0 may be its input 0's memory (kViewOfInput): a
// view of a kept value is kept for free.
bool views_input(const Node& node, const OpRegistry& registry);

// Applies recompute with the given checkpoints (a view of a checkpoint is
// kept too); returns the number of cloned nodes and, when asked, their
// estimated FLOPs. Throws naming a checkpoint that is not a forward value.
int apply_recompute(Graph& graph, const std::string& loss, const std::vector<std::string>& checkpoints,
                    const OpRegistry& registry, int64_t* recomputed_flops = nullptr);

class Recompute final : public Pass {
 public:
  explicit Recompute(RecomputeOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "recompute"; }
  bool run(Graph& graph, PassContext& context) override;

  // After run(): the checkpoints used, the nodes cloned, the estimated
  // FLOPs of the clones and of the forward pass, the estimated peaks (0
  // without an estimator), the budget the automatic choice met (0 when not
  // automatic or without an estimator) and the peak estimates it made.
  const std::vector<std::string>& checkpoints() const { return chosen_; }
  int recomputed_nodes() const { return recomputed_; }
  int64_t recomputed_flops() const { return recomputed_flops_; }
  int64_t forward_flops() const { return forward_flops_; }
  int64_t peak_before() const { return peak_before_; }
  int64_t peak_after() const { return peak_after_; }
  int64_t budget() const { return budget_; }
  int evaluations() const { return evaluations_; }

 private:
  RecomputeOptions options_;
  std::vector<std::string> chosen_;
  int recomputed_ = 0;
  int64_t recomputed_flops_ = 0;
  int64_t forward_flops_ = 0;
  int64_t peak_before_ = 0;
  int64_t peak_after_ = 0;
  int64_t budget_ = 0;
  int evaluations_ = 0;
};

}  // namespace weir
