// In-process communicators: the ranks of a group are threads of one process
// (the runtime's virtual devices), and collectives exchange tensors through
// shared memory.
//
//   std::vector<std::shared_ptr<weir::Communicator>> ranks =
//       weir::make_in_process_group(4);
//   // on the thread of rank r:
//   ranks[r]->all_reduce(grad, weir::ReduceOp::kSum, "grad/w1");
//
// How a collective runs: every rank deposits its tensor in a shared "round"
// (keyed by tag and call count), waits until all have arrived, then computes
// its own share of the result from all deposits (an all-reduce reduces rank
// r's 1/size slice of the elements, so the work is spread over the ranks),
// and waits once more so that no rank overwrites a deposit another still
// reads. A rank that waits longer than the group's timeout, or a group that
// was aborted, gets a kCommunication error naming the collective, its tag
// and the ranks that never arrived.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "core/communicator.h"

namespace weir {

struct InProcessGroupOptions {
  // How long one rank waits for the others in one collective before giving up.
  std::chrono::milliseconds timeout{std::chrono::minutes(2)};
};

// One communicator per rank, for ranks 0 .. size-1 of a new group.
std::vector<std::shared_ptr<Communicator>> make_in_process_group(int size,
                                                                  const InProcessGroupOptions& options = {});

}  // namespace weir
