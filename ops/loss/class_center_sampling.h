// PartialFC's class-centre sampling (An et al., "Partial FC", ICCVW 2021;
// PLSC v2; ../shared/DISTRIBUTED.md §7): each step a rank trains only a
// sample of its shard of the class centres, always keeping the centres of
// the classes in the (all-gathered) batch, so the softmax still sees every
// positive, with random others filling the sample.
//
//   SampleClassCenters(local_labels [B]) -> columns [K], sampled_labels [B]
//     attributes classes = C, num_sample = K (<= ceil(C / N)), seed
//
// `local_labels` are ShardLabels' (a column of this rank's shard, or -1).
// `columns` are K distinct shard columns in ascending order: every
// column some label names, then random others of this rank's classes,
// then (only when the rank holds fewer than K classes) padding columns,
// which MaskShardPadding(x, columns) masks. `sampled_labels[b]` is the
// position of labels[b]'s column in `columns`, or -1.
//
//   Gather(W_shard [width, D], columns, axis 0) -> the sampled centres [K, D]
//
// The random part is a partial Fisher-Yates shuffle keyed by the seed and
// the run's counter (KernelContext::rng_counter), so a run replays. More
// distinct positives than K fail naming both counts.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_class_center_sampling_schemas(OpRegistry& registry);
void register_class_center_sampling_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
