// Softmax cross-entropy over classes sharded across ranks (PLSC's
// distributed softmax; ../shared/DISTRIBUTED.md §7), the per-rank part.
// Each rank holds logits [B, width] for its shard of the classes (padding
// columns masked to -inf, ops/loss/class_shards.h); the graph around this
// op finds each row's maximum and sum of exponentials over the whole world:
//
//   masked  = MaskShardPadding(logits)
//   row_max = AllReduce(ReduceMax(masked, axis 1), max)
//   exp_sum = AllReduce(ReduceSum(Exp(masked - row_max), axis 1), sum)
//   part    = ShardedCrossEntropy(masked, row_max, exp_sum, ShardLabels(labels))
//   loss    = ReduceScatter(part, sum) ...          each rank its own rows
//
//   ShardedCrossEntropy(logits [B, W], row_max [B], exp_sum [B], local_labels [B]) -> part [B]
//     part[b] = -(logits[b, label] - row_max[b] - log(exp_sum[b]))   this rank holds the label
//             = 0                                                    label -1: another rank does
//
// so the ranks' parts add up to each row's cross-entropy. Its gradient rule
// is the whole softmax's, not this op's alone: with g = dPart,
//
//   dLogits[b, j] = g[b] * (exp(logits[b, j] - row_max[b]) / exp_sum[b] - [j == label[b]])
//
// on every rank (the gradient reaching each rank's part is the same g, the
// AllGather that ReduceScatter's gradient is), and none flows to row_max and
// exp_sum, whose derivatives are inside that formula.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_sharded_cross_entropy_schemas(OpRegistry& registry);
void register_sharded_cross_entropy_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
