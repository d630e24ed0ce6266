#include "distributed/gloo/gloo_world.h"

#include "core/error.h"
#include "distributed/gloo/gloo_communicator.h"

namespace weir {

namespace {

class GlooWorld final : public World {
 public:
  GlooWorld(const LaunchEnvironment& launch, std::shared_ptr<Communicator> communicator)
      : launch_(launch), communicator_(std::move(communicator)) {}

  int size() const override { return launch_.world_size; }
  int rank() const override { return launch_.rank; }
  int local_size() const override { return launch_.local_world_size; }
  int local_rank() const override { return launch_.local_rank; }
  Device device() const override { return Device::cpu(0); }
  std::string description() const override {
    return "Gloo world of " + std::to_string(size()) + " processes, rank " + std::to_string(rank()) + " (" +
           launch_.source + ")";
  }
  std::shared_ptr<Communicator> communicator() override { return communicator_; }
  void abort(const std::string& reason) override { communicator_->abort(reason); }

 private:
  LaunchEnvironment launch_;
  std::shared_ptr<Communicator> communicator_;
};

}  // namespace

std::shared_ptr<World> make_gloo_world(const LaunchEnvironment& launch, const GlooWorldOptions& options) {
  if (launch.local_world_size < 1 || launch.world_size % launch.local_world_size != 0) {
    throw Error(ErrorKind::kInvalidArgument, "a world of " + std::to_string(launch.world_size) +
                                                 " ranks cannot be split into nodes of " +
                                                 std::to_string(launch.local_world_size));
  }
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
  return std::make_shared<GlooWorld>(launch, make_gloo_communicator(launch.rank, launch.world_size, group));
}

}  // namespace weir
