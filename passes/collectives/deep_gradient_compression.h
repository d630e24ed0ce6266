// Deep gradient compression (Lin et al., ICLR 2018; Fleet's dgc and
// dgc_configs, with Paddle's conventions): a data-parallel step whose large
// gradients are exchanged as their largest entries instead of averaged.
//
//   weir::DeepGradientCompression pass({.ranks = 2, .sparsity = {0.75, 0.9375, 0.984375, 0.996, 0.999},
//                                       .rampup_step = 200});
//   pass.run(step_graph, ctx);   // after data_parallel (which left these gradients unaveraged),
//                                // before gradient_buckets
//
// A parameter takes part when it is f32 with at least 16384 elements and
// the optimizer is Momentum (its update is a Momentum node); the others keep
// the ordinary averaged gradient and Momentum update (their gradients are
// bucketed as usual). For each one, the Momentum update becomes
// (ops/optimizer/dgc.h):
//
//   encoded  = DgcEncode(grad, param, velocity, "<param>/dgc_v", step)   local clip, U, V, top pairs
//   gathered = AllGather(encoded, skip = dense phase)                    every rank's pairs
//   averaged = AllReduce(grad, avg, skip = sparse phase)                 before the ramp
//   DgcMomentum(param, velocity, averaged, gathered, encoded, lr, step)  Momentum, then plain SGD
//
// so before rampup_begin_step the step is exactly dense data parallelism
// with Momentum, and from then on each rank sends 2k floats per parameter
// (k from the sparsity ramp) and every rank applies the same sum of all
// ranks' pairs, divided by the ranks. U is Momentum's velocity; V
// ("<param>/dgc_v") is each rank's own, checkpointed as optimizer state.
// Clipping: with clip_norm > 0, each rank's gradient of each parameter is
// clipped at clip_norm / sqrt(ranks) from rampup_begin_step on.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace weir {

struct DgcOptions {
  int ranks = 1;                      // the world's size (the AllGather's group, the clip)
  int rampup_begin_step = 0;          // 0-based steps before it are dense
  int rampup_step = 1;                // steps over which the sparsity list is walked
  std::vector<double> sparsity{0.999};
  double clip_norm = 0;               // 0: no clipping
  std::set<std::string> excluded{};  // parameters that never take part (model-parallel shards)
};

// The parameters DGC compresses among `parameters` of `graph`: f32, static,
// at least kDgcMinElements elements, not excluded.
constexpr int64_t kDgcMinElements = 16384;
std::vector<std::string> dgc_parameters(const Graph& graph, const std::vector<std::string>& parameters,
                                        const std::set<std::string>& excluded);

class DeepGradientCompression final : public Pass {
 public:
  explicit DeepGradientCompression(DgcOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "deep_gradient_compression"; }
  bool run(Graph& graph, PassContext& context) override;
  const std::vector<std::string>& compressed() const { return compressed_; }

 private:
  DgcOptions options_;
  std::vector<std::string> compressed_;
};

}  // namespace weir
