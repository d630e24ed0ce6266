#include "tools/graph-runner/launched_world.h"

#include <unistd.h>

#include <algorithm>

#include "core/error.h"
#include "distributed/gloo/gloo_world.h"
#include "distributed/launch_environment.h"
#include "distributed/nccl/nccl_world.h"
#include "ops/threading.h"

namespace weir::tools {

std::shared_ptr<World> launched_world(const LaunchedWorldOptions& options) {
  LaunchEnvironment launch = read_launch_environment(process_environment());
  std::shared_ptr<World> world;
  if (options.device == DeviceType::kCuda && launch.source != "none") {
    world = make_nccl_world(launch, {.job = options.job, .timeout = options.timeout});
  } else {
    if (launch.world_size == 1) return nullptr;
    GlooWorldOptions gloo;
    gloo.job = options.job;
    gloo.timeout = options.timeout;
    gloo.allreduce = options.allreduce;
    // Peers connect to the address this rank listens on: loopback for a job
    // on one host, else this host's name.
    if (launch.master_addr != "127.0.0.1" && launch.master_addr != "localhost") {
      char name[256] = {};
      if (::gethostname(name, sizeof(name) - 1) == 0) gloo.hostname = name;
    }
    world = make_gloo_world(launch, gloo);
  }
  // The ranks on this host share its cores: each takes its part for its
  // kernels' threads (OpenMP and oneDNN), or their threads would contend
  // (torchrun sets OMP_NUM_THREADS=1 for the same reason).
  set_intra_op_threads(std::max(1, available_cores() / launch.local_world_size));
  return world;
}

GlooAllreduce parse_gloo_allreduce(const std::string& name) {
  if (name == "rank-order") return GlooAllreduce::kRankOrder;
  if (name == "ring") return GlooAllreduce::kRing;
  if (name == "bcube") return GlooAllreduce::kBcube;
  throw Error(ErrorKind::kInvalidArgument, "'" + name + "' is not an allreduce algorithm: rank-order, ring or bcube");
}

}  // namespace weir::tools
