// Collective check at session start: the ranks of a world run one program
// each, and a program that calls different collectives than its peers (a
// rank built with another batch size, another model, another strategy)
// would deadlock or corrupt tensors. Before the first run, every rank sends
// a fingerprint of its ordered collective list to every other; on a
// mismatch all ranks refuse to run, naming the first collective that
// differs and the two ranks.
//
//   std::vector<std::string> mine = weir::collective_signature(plan);
//   weir::check_collectives_match(mine, *world->communicator());   // throws kCommunication
#pragma once

#include <string>
#include <vector>

#include "core/communicator.h"
#include "runtime/plan.h"

namespace weir {

// One line per group collective of the plan (Send and Recv, which differ
// between ranks by design, are left out), in schedule order: op, tag,
// attributes, input types and stream, e.g.
// "AllReduce tag 'dp/grad/w' reduction=avg f32[10,5] on comm".
std::vector<std::string> collective_signature(const Plan& plan);

// Exchanges the signatures' fingerprints over `communicator` (a collective
// every rank calls once). Returns when all ranks agree; throws
// weir::Error(kCommunication) otherwise, on every rank, with the same
// message: "rank 0 and rank 1 run different collectives: collective #3 is
// AllReduce ... on rank 0 but AllGather ... on rank 1".
void check_collectives_match(const std::vector<std::string>& signature, Communicator& communicator);

// Checks that every collective of a rank's program fits a world of
// `world_size` ranks with this rank `rank`: group members are ranks of the
// world and include this rank; Send/Recv peers are ranks of their group (or
// the world) other than this one. Throws weir::Error(kInvalidGraph) naming
// the node otherwise ("Send 'to_next': peer 2 is not a rank of a world of 2").
void check_collective_ranks(const Plan& plan, int world_size, int rank);

}  // namespace weir
