// The World of one process among those a launcher started (Gloo's, NCCL's):
// rank, size and node layout from the launch environment, the device this
// rank computes on, and the communicator its backend made.
//
//   weir::require_whole_nodes(launch);                        // before rendezvous
//   std::shared_ptr<weir::World> world = weir::make_process_world(launch, "NCCL", weir::Device::cuda(0), comm);
//   world->description();   // "NCCL world of 2 processes, rank 1 on cuda:0 (torchrun)"
#pragma once

#include <memory>
#include <string>

#include "core/communicator.h"
#include "core/device.h"
#include "core/world.h"
#include "distributed/launch_environment.h"

namespace weir {

// Throws weir::Error(kInvalidArgument) unless the ranks split evenly into
// nodes of local_world_size.
void require_whole_nodes(const LaunchEnvironment& launch);

// `backend` names the world in messages; a CPU device is not named there.
std::shared_ptr<World> make_process_world(const LaunchEnvironment& launch, std::string backend, Device device,
                                          std::shared_ptr<Communicator> communicator);

}  // namespace weir
