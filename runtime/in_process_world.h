// The in-process world: ranks as threads of one process, each with its own
// virtual device, talking through an in-process communicator group
// (runtime/in_process_communicator.h). It is what --data-parallel N runs on,
// and what tests use to run N ranks' programs without launching processes.
//
//   std::vector<std::shared_ptr<weir::World>> ranks = weir::make_in_process_world(4);
//   // on the thread of rank r: a Session with SessionOptions::world = ranks[r]
//
// Rank r computes on cpu:r unless InProcessWorldOptions::devices says
// otherwise; ranks_per_node splits the ranks into nodes (for tests of
// hierarchical algorithms), by default one node holds them all.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "core/world.h"

namespace weir {

struct InProcessWorldOptions {
  // How long one rank waits for the others in one collective.
  std::chrono::milliseconds timeout{std::chrono::minutes(2)};
  std::vector<Device> devices{};  // by rank; empty: cpu:0 .. cpu:size-1
  int ranks_per_node = 0;         // 0: all ranks on one node; else must divide size
  // When set, each rank's world is returned through it: a decorator such as
  // distributed/metered_world.h's, which counts and slows the rank's calls.
  std::function<std::shared_ptr<World>(std::shared_ptr<World>)> wrap{};
};

// The worlds of ranks 0 .. size-1 of one new in-process world.
std::vector<std::shared_ptr<World>> make_in_process_world(int size, const InProcessWorldOptions& options = {});

}  // namespace weir
