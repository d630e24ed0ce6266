// AllReduce topologies as rewrites into collectives over subgroups: each
// gradient bucket's AllReduce (passes/collectives/gradient_buckets.h)
// becomes three collectives over a grid of rows × cols ranks (world rank =
// row * cols + col):
//
//   ReduceScatter along the row     (the cols ranks of my row; 1/cols of the bucket each)
//   AllReduce along the column      (the rows ranks holding the same shard)
//   AllGather along the row         (the whole bucket again)
//
// Hierarchical allreduce is this grid with a node per row (cols = ranks per
// node): the reduce-scatter and the allgather stay inside a node, and only
// 1/cols of each bucket crosses between nodes, by the rank holding that
// shard (Horovod's hierarchical allreduce; Fleet's
// use_hierarchical_allreduce). 2-D allreduce is the same rewrite for any
// rows × cols grid. Groups are partitions (core/collective_group.h), so the
// program stays the same on every rank.
//
//   weir::AllreduceTopology pass({.rows = 2, .cols = 2});   // 4 ranks: 2 nodes of 2
//   pass.run(step_graph, ctx);                               // after gradient_buckets
//
// Every bucket's length must divide by cols (gradient_buckets pads them with
// pad_to_multiple = cols). Each phase averages over its group, so the
// result is the world's average; it differs from the flat AllReduce only in
// the order of the additions (f32 rounding).
#pragma once

#include <string>

#include "passes/pass.h"

namespace weir {

struct AllreduceTopologyOptions {
  int rows = 1;
  int cols = 1;
};

class AllreduceTopology final : public Pass {
 public:
  explicit AllreduceTopology(AllreduceTopologyOptions options) : options_(options) {}
  std::string name() const override { return "allreduce_topology"; }
  bool run(Graph& graph, PassContext& context) override;
  int rewritten() const { return rewritten_; }  // bucket AllReduces rewritten

 private:
  AllreduceTopologyOptions options_;
  int rewritten_ = 0;
};

}  // namespace weir
