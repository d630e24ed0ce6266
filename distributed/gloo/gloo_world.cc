#include "distributed/gloo/gloo_world.h"

#include "distributed/gloo/gloo_communicator.h"
#include "distributed/process_world.h"

namespace weir {

std::shared_ptr<World> make_gloo_world(const LaunchEnvironment& launch, const GlooWorldOptions& options) {
  require_whole_nodes(launch);
  GlooGroupOptions group;
  group.job = options.job;
  group.hostname = options.hostname;
  group.timeout = options.timeout;
  group.store_directory = options.store_directory;
  group.allreduce = options.allreduce;
  if (options.store_directory.empty()) {
    group.master_addr = launch.master_addr;
    group.master_port = launch.master_port;
  }
  return make_process_world(launch, "Gloo", Device::cpu(0),
                            make_gloo_communicator(launch.rank, launch.world_size, group));
}

}  // namespace weir
