#include "distributed/process_world.h"

#include "core/error.h"

namespace weir {

namespace {

class ProcessWorld final : public World {
 public:
  ProcessWorld(const LaunchEnvironment& launch, std::string backend, Device device,
               std::shared_ptr<Communicator> communicator)
      : launch_(launch), backend_(std::move(backend)), device_(device), communicator_(std::move(communicator)) {}

  int size() const override { return launch_.world_size; }
  int rank() const override { return launch_.rank; }
  int local_size() const override { return launch_.local_world_size; }
  int local_rank() const override { return launch_.local_rank; }
  Device device() const override { return device_; }
  std::string description() const override {
    return backend_ + " world of " + std::to_string(size()) + " processes, rank " + std::to_string(rank()) +
           (device_.type == DeviceType::kCpu ? "" : " on " + device_.to_string()) + " (" + launch_.source + ")";
  }
  std::shared_ptr<Communicator> communicator() override { return communicator_; }
  void abort(const std::string& reason) override { communicator_->abort(reason); }

 private:
  LaunchEnvironment launch_;
  std::string backend_;
  Device device_;
  std::shared_ptr<Communicator> communicator_;
};

}  // namespace

void require_whole_nodes(const LaunchEnvironment& launch) {
  if (launch.local_world_size < 1 || launch.world_size % launch.local_world_size != 0) {
    throw Error(ErrorKind::kInvalidArgument, "a world of " + std::to_string(launch.world_size) +
                                                 " ranks cannot be split into nodes of " +
                                                 std::to_string(launch.local_world_size));
  }
}

std::shared_ptr<World> make_process_world(const LaunchEnvironment& launch, std::string backend, Device device,
                                          std::shared_ptr<Communicator> communicator) {
  return std::make_shared<ProcessWorld>(launch, std::move(backend), device, std::move(communicator));
}

}  // namespace weir
