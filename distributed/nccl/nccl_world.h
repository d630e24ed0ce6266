// A world of processes over NCCL, one per GPU: this process is one rank, its
// program runs on its GPU (cuda:<local rank> unless told otherwise), and the
// ranks meet through the TCP store rank 0 serves at the launch environment's
// master address.
//
//   weir::LaunchEnvironment launch = weir::read_launch_environment(weir::process_environment());
//   std::shared_ptr<weir::World> world = weir::make_nccl_world(launch, {.timeout = std::chrono::seconds(60)});
//   weir::SessionOptions options;
//   options.world = world;            // runtime/session.h: the plan runs on world->device()
//   weir::Session session(plan, options);
//
// Groups are communicators of their own (distributed/nccl/nccl_communicator.h),
// made at their first call. A world of one process is a real NCCL world too,
// so one GPU trains through the same path as many. This header needs no
// CUDA headers; in a build without CUDA make_nccl_world throws kUnsupported.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/world.h"
#include "distributed/launch_environment.h"

namespace weir {

struct NcclWorldOptions {
  std::string job = "weir";                       // the job's namespace in the store
  std::optional<int> device_index{};              // this rank's GPU; default: its local rank
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // rendezvous, and collectives without their own
};

// Throws weir::Error naming the rank and the device when this rank's GPU is
// missing or NCCL cannot be loaded, and the store when it cannot be reached.
std::shared_ptr<World> make_nccl_world(const LaunchEnvironment& launch, const NcclWorldOptions& options = {});

}  // namespace weir
