// Gradient merge (Fleet's gradient_merge, gradient_merge_configs.k_steps and
// .avg): each rank accumulates k micro-steps' gradients and communicates and
// applies them once, on every k-th step, so a step of batch B trains like
// one of batch k*B with the activations of B.
//
//   weir::GradientMerge({.k_steps = 4}).run(graph, ctx);        // after differentiate
//   ... optimizer_updates, data_parallel, gradient_buckets, allreduce_topology
//   weir::SkipMergedCommunication().run(graph, ctx);            // after the collectives exist
//
// GradientMerge gives every trained parameter an accumulator (a persistent
// "<param>/gradient_merge", saved in checkpoints like optimizer state) and a
// GradientMerge node (ops/optimizer/gradient_merge.h), and computes from the
// step number (the "step" input, 1 on the first step, added when the
// optimizer did not need it) apply = step % k == 0. The updates read the
// merged gradient and skip when apply is false; the Adam family's bias
// correction counts applied updates (step / k). SkipMergedCommunication
// gives every collective that carries merged gradients (the data-parallel
// AllReduces, buckets, topology phases) the same skip flag, so ranks
// communicate once per k steps. Dynamic loss scaling is refused with it.
#pragma once

#include "passes/pass.h"

namespace weir {

struct GradientMergeOptions {
  int k_steps = 1;  // micro-steps per update, >= 1
  bool avg = true;  // the mean of the k micro-steps' gradients (false: their sum)
};

class GradientMerge final : public Pass {
 public:
  explicit GradientMerge(GradientMergeOptions options) : options_(options) {}
  std::string name() const override { return "gradient_merge"; }
  bool run(Graph& graph, PassContext& context) override;

 private:
  GradientMergeOptions options_;
};

class SkipMergedCommunication final : public Pass {
 public:
  std::string name() const override { return "skip_merged_communication"; }
  bool run(Graph& graph, PassContext& context) override;
  int collectives() const { return collectives_; }  // the collectives given the skip flag

 private:
  int collectives_ = 0;
};

}  // namespace weir
