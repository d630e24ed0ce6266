#include "distributed/nccl/nccl_world.h"

#include "core/error.h"
#include "distributed/nccl/nccl_communicator.h"

namespace weir {

namespace {

class NcclWorld final : public World {
 public:
  NcclWorld(const LaunchEnvironment& launch, Device device, std::shared_ptr<Communicator> communicator)
      : launch_(launch), device_(device), communicator_(std::move(communicator)) {}

  int size() const override { return launch_.world_size; }
  int rank() const override { return launch_.rank; }
  int local_size() const override { return launch_.local_world_size; }
  int local_rank() const override { return launch_.local_rank; }
  Device device() const override { return device_; }
  std::string description() const override {
    return "NCCL world of " + std::to_string(size()) + " processes, rank " + std::to_string(rank()) + " on " +
           device_.to_string() + " (" + launch_.source + ")";
  }
  std::shared_ptr<Communicator> communicator() override { return communicator_; }
  void abort(const std::string& reason) override { communicator_->abort(reason); }

 private:
  LaunchEnvironment launch_;
  Device device_;
  std::shared_ptr<Communicator> communicator_;
};

}  // namespace

std::shared_ptr<World> make_nccl_world(const LaunchEnvironment& launch, const NcclWorldOptions& options) {
  if (launch.local_world_size < 1 || launch.world_size % launch.local_world_size != 0) {
    throw Error(ErrorKind::kInvalidArgument, "a world of " + std::to_string(launch.world_size) +
                                                 " ranks cannot be split into nodes of " +
                                                 std::to_string(launch.local_world_size));
  }
  NcclGroupOptions group;
  group.master_addr = launch.master_addr;
  group.master_port = launch.master_port;
  group.job = options.job;
  group.timeout = options.timeout;
  group.device = Device::cuda(options.device_index.value_or(launch.local_rank));
  return std::make_shared<NcclWorld>(launch, group.device, make_nccl_communicator(launch.rank, launch.world_size, group));
}

}  // namespace weir
