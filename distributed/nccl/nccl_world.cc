#include "distributed/nccl/nccl_world.h"

#include "distributed/nccl/nccl_communicator.h"
#include "distributed/process_world.h"

namespace weir {

std::shared_ptr<World> make_nccl_world(const LaunchEnvironment& launch, const NcclWorldOptions& options) {
  require_whole_nodes(launch);
  NcclGroupOptions group;
  group.master_addr = launch.master_addr;
  group.master_port = launch.master_port;
  group.job = options.job;
  group.timeout = options.timeout;
  group.device = Device::cuda(options.device_index.value_or(launch.local_rank));
  return make_process_world(launch, "NCCL", group.device,
                            make_nccl_communicator(launch.rank, launch.world_size, group));
}

}  // namespace weir
