// The collectives a step runs only on some steps: every collective
// downstream (by data edges) of the given nodes gets a `skip` flag, a bool
// scalar every rank computes alike, so on the steps it is true no rank
// communicates. Gradient merge (communication once per k micro-steps) and
// LocalSGD (parameters averaged every k steps) use it after the gradient
// buckets exist, so the bucket AllReduces skip too.
//
//   int n = weir::skip_collectives_after(merge_nodes, skip, "skip_merged_communication");
#pragma once

#include <vector>

#include "core/graph.h"

namespace weir {

// Returns the collectives (AllReduce, AllGather, ReduceScatter) given the
// flag. Throws weir::Error(kInvalidArgument), naming `pass` and the node,
// when one already has a skip input.
int skip_collectives_after(const std::vector<Node*>& sources, Value* skip, const char* pass);

}  // namespace weir
