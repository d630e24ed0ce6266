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
//   options.memory_budget = 512 << 20;   // ... so that the estimated peak fits
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
// Automatic choice: the candidates are the forward values that are the only
// activation alive at their point of the forward order (a chain's links,
// block outputs). Without an estimator the pass keeps every ⌊m/√m⌋-th
// candidate (√m segments). With `estimate_peak` it tries every segment
// count and keeps the one with the lowest estimated peak, or under
// `memory_budget` the one that recomputes least among those that fit; when
// none fits it throws, naming the budget and the lowest peak it can reach.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace weir {

// The in-order stream apply_recompute() puts the step's nodes on.
inline constexpr const char* kRecomputeStream = "step";

struct RecomputeOptions {
  std::string loss{};                     // the scalar the forward graph computes
  std::vector<std::string> checkpoints{};  // kept forward values (ignored when automatic)
  bool automatic = false;
  int64_t memory_budget = 0;              // bytes; 0: none. Needs estimate_peak.
  // The peak memory of running a graph (planned arena plus persistent and
  // fed values), from the runtime's memory planner: passes cannot include
  // the runtime, so the caller gives it. It may place the graph.
  std::function<int64_t(Graph&)> estimate_peak{};
};

// Forward values that are the only activation alive at their point of the
// forward order, in that order: the automatic choice picks among these.
std::vector<std::string> recompute_candidates(const Graph& graph, const std::string& loss);

// Applies recompute with the given checkpoints; returns the number of
// cloned nodes. Throws naming a checkpoint that is not a forward value.
int apply_recompute(Graph& graph, const std::string& loss, const std::vector<std::string>& checkpoints,
                    const OpRegistry& registry);

class Recompute final : public Pass {
 public:
  explicit Recompute(RecomputeOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "recompute"; }
  bool run(Graph& graph, PassContext& context) override;

  // After run(): the checkpoints used, the nodes cloned, and the estimated
  // peaks (0 without an estimator).
  const std::vector<std::string>& checkpoints() const { return chosen_; }
  int recomputed_nodes() const { return recomputed_; }
  int64_t peak_before() const { return peak_before_; }
  int64_t peak_after() const { return peak_after_; }

 private:
  RecomputeOptions options_;
  std::vector<std::string> chosen_;
  int recomputed_ = 0;
  int64_t peak_before_ = 0;
  int64_t peak_after_ = 0;
};

}  // namespace weir
