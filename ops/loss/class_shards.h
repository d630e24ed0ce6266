// Classes sharded over the ranks of a world (model-parallel classification,
// PLSC; ../shared/DISTRIBUTED.md §7): C classes split as evenly as
// possible, rank r holding C / N classes, one more when r < C % N, from
//
//   start(r) = r * (C / N) + min(r, C % N)
//
// Every rank's shard of the classifier is `width` = ceil(C / N) columns
// wide, so every rank runs the same program; a rank with fewer classes
// has padding columns past its `count`, which the model-parallel head
// masks out of the softmax.
//
//   ShardLabels(labels [...]) -> local [...]          attribute classes = C
//     local = label - start(rank) when this rank holds the class, else -1
//
//   MaskShardPadding(x [B, width], columns [K]?) -> [B, width]    attributes classes = C, fill
//     x with this rank's padding columns (count .. width) set to `fill`
//     (-inf by default: out of every softmax; its gradient is itself with
//     fill 0). With `columns` (PartialFC's sampled shard columns,
//     ops/loss/class_center_sampling.h) x is [B, K] and its column j is
//     shard column columns[j].
//
// The rank and the world's size are the kernel's communicator's (a world
// of one outside a world). A label outside [0, C) fails naming its
// position.
#pragma once

#include <cstdint>
#include <vector>

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

struct ClassShard {
  int64_t start = 0;  // the first class this rank holds
  int64_t count = 0;  // the classes it holds
  int64_t width = 0;  // every rank's shard width, ceil(C / N)
};

// Throws weir::Error(kInvalidArgument) unless classes >= ranks >= 1 and
// 0 <= rank < ranks.
ClassShard class_shard(int64_t classes, int64_t ranks, int64_t rank);

// The labels of the ops that read a shard's columns (MarginLogits,
// ShardedCrossEntropy, SampleClassCenters): i64 or i32, one per row, each
// a column in [0, columns) or -1 (a class another rank holds), as int64.
// Anything else fails the kernel naming the row.
std::vector<int64_t> shard_column_labels(const KernelContext& ctx, const Tensor& labels, int64_t rows, int64_t columns);

void register_class_shard_schemas(OpRegistry& registry);
void register_class_shard_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
