// LocalSGD (Stich 2019; Fleet's localsgd / adaptive_localsgd meta-optimizers):
// the step becomes the program every rank of a world runs, each rank
// training its own copy of the parameters on its own share of the batch
// and running its own optimizer step every step; the ranks average their
// parameters every step up to `begin_step`, then every `k_steps` steps
// (adaptive: an interval set at each average from the world's mean loss
// and the learning rate, 1 to 16; ops/optimizer/local_sgd.h).
//
//   weir::LocalSgd({.k_steps = 4, .begin_step = 1}).run(step_graph, ctx);   // after optimizer_updates
//   ... gradient_buckets (the differences are bucketed like gradients) ...
//   weir::SkipLocalSgdCommunication().run(step_graph, ctx);                 // no traffic between averages
//
// Averaging goes through a snapshot S of each value at the last average
// ("<name>/localsgd_snapshot", checkpointed with the optimizer state):
// after the update, delta = S - P is averaged over the world (an AllReduce,
// tag "dp/localsgd/<name>", skipped between averages), then P = S - delta
// and S = P. Averaged: every trained parameter except those the options
// exclude (model-parallel shards), and the f32 buffers the step writes
// (BatchNorm's running statistics). The loss stays the rank's own (the
// graph output); adaptive LocalSGD averages it over the world on the
// steps that average the parameters, and nowhere else.
//
// With k_steps 1 (and SGD or Momentum) every rank's parameters after a
// step equal those of data parallelism on the whole batch, up to rounding.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace weir {

struct LocalSgdOptions {
  int k_steps = 1;      // steps between averages after begin_step (adaptive: the first interval's init_k_steps)
  int begin_step = 1;   // every step up to this one averages
  bool adaptive = false;
  int init_k_steps = 1; // adaptive
  std::set<std::string> excluded{};  // parameters each rank keeps its own of (distributed)
};

class LocalSgd final : public Pass {
 public:
  explicit LocalSgd(LocalSgdOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "local_sgd"; }
  bool run(Graph& graph, PassContext& context) override;
  const std::vector<std::string>& averaged() const { return averaged_; }

 private:
  LocalSgdOptions options_;
  std::vector<std::string> averaged_;
};

// Gives every collective that carries the snapshot differences (their
// AllReduces, or the buckets holding them) LocalSGD's skip flag.
class SkipLocalSgdCommunication final : public Pass {
 public:
  std::string name() const override { return "skip_local_sgd_communication"; }
  bool run(Graph& graph, PassContext& context) override;
  int collectives() const { return collectives_; }

 private:
  int collectives_ = 0;
};

}  // namespace weir
