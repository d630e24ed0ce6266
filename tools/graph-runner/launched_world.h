// The world a launcher (graph-runner launch, torchrun, mpirun, srun)
// started this process into: a Gloo world for ranks on CPUs, an NCCL world
// (one process per GPU, rank on cuda:<local rank>) for ranks on GPUs. What
// `train` and `comm-bench` run in. Read once, from the environment.
//
//   std::shared_ptr<weir::World> world = weir::tools::launched_world({.job = "weir", .timeout = 60s});
//   if (world == nullptr) { /* not launched: a world of one */ }
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/device.h"
#include "core/world.h"
#include "distributed/gloo/gloo_communicator.h"

namespace weir::tools {

struct LaunchedWorldOptions {
  std::string job = "weir";  // the namespace in the rendezvous store
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};  // rendezvous and each collective
  GlooAllreduce allreduce = GlooAllreduce::kRankOrder;
  // kCuda: an NCCL world, each rank on the GPU of its local rank (the
  // index here is ignored). kCpu: a Gloo world.
  DeviceType device = DeviceType::kCpu;
};

// nullptr when the environment names no world, or (on CPUs) a world of one;
// on GPUs a launched world of one is an NCCL world of one. In a world, sets
// this process's intra-op threads to its share of the host's cores (cores /
// ranks on this host).
std::shared_ptr<World> launched_world(const LaunchedWorldOptions& options);

// "rank-order", "ring" or "bcube"; throws weir::Error(kInvalidArgument) otherwise.
GlooAllreduce parse_gloo_allreduce(const std::string& name);

}  // namespace weir::tools
