// The ranks one collective node runs among, read from its attributes.
//
//   group = []                      the whole world
//   group = [0, 2]                  ranks 0 and 2 (its rank r is group[r])
//   group = [0, 1, 2, 3], group_size = 2
//                                   a partition: {0, 1} and {2, 3}; each
//                                   rank takes the run of `group_size` that
//                                   contains it
//
// The partition form is how one program (the same on every rank) says
// "within my node" or "along my row": the intra-node groups of 2 nodes × 2
// ranks are [0, 1, 2, 3] in runs of 2, the inter-node ones [0, 2, 1, 3].
//
//   std::vector<int64_t> ranks = weir::collective_group(node, world_rank, world_size);
//   int64_t size = weir::collective_group_size(node);   // for shape inference; 0: the world
#pragma once

#include <cstdint>
#include <vector>

namespace weir {

class Node;

// The world ranks of `node`'s group for the rank `rank` of a world of
// `world_size`, in group order. Throws weir::Error(kInvalidGraph) naming the
// node when the attributes do not name a group containing `rank`: a rank
// outside the world, one listed twice, a partition whose length does not
// divide by group_size, `rank` in no group.
std::vector<int64_t> collective_group(const Node& node, int64_t rank, int64_t world_size);

// The number of ranks in each of the node's groups, from the attributes
// alone: group_size when given, else the length of `group`; 0 when the
// group is the whole world (its size is known only at run time).
int64_t collective_group_size(const Node& node);

}  // namespace weir
