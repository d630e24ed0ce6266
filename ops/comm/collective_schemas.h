// Communication ops: the collectives (AllReduce, Broadcast, AllGather,
// ReduceScatter, Barrier), point to point (Send, Recv) and DeviceCopy, which
// the runtime inserts where a value crosses devices.
//
// Collectives carry the kCollective and kSideEffects traits: the runtime runs
// them on a device's communication stream, in the same order on every rank,
// and dead-code elimination keeps them. Attributes shared by the collectives:
//   group: the ranks taking part (default: all ranks of the communicator);
//   tag:   what matches the calls of different ranks (see core/communicator.h).
//
//   Node* sum = graph.add_node("AllReduce", {grad}, 1,
//                              {{"reduction", Attribute("avg")}, {"tag", Attribute("grad/w1")}});
#pragma once

#include "core/op_schema.h"

namespace weir {

void register_collective_schemas(OpRegistry& registry);

}  // namespace weir
