#include "runtime/in_process_world.h"

#include "core/error.h"
#include "runtime/in_process_communicator.h"

namespace weir {
namespace {

class InProcessWorld final : public World {
 public:
  InProcessWorld(std::shared_ptr<Communicator> communicator, int local_size, Device device)
      : communicator_(std::move(communicator)), local_size_(local_size), device_(device) {}

  int size() const override { return communicator_->size(); }
  int rank() const override { return communicator_->rank(); }
  int local_size() const override { return local_size_; }
  int local_rank() const override { return rank() % local_size_; }
  Device device() const override { return device_; }
  std::string description() const override {
    return "in-process world of " + std::to_string(size()) + ", rank " + std::to_string(rank());
  }

  std::shared_ptr<Communicator> communicator() override { return communicator_; }

  void abort(const std::string& reason) override { communicator_->abort(reason); }

 private:
  std::shared_ptr<Communicator> communicator_;
  int local_size_;
  Device device_;
};

}  // namespace

std::vector<std::shared_ptr<World>> make_in_process_world(int size, const InProcessWorldOptions& options) {
  if (size < 1) {
    throw Error(ErrorKind::kInvalidArgument, "an in-process world needs at least one rank, got " + std::to_string(size));
  }
  if (!options.devices.empty() && static_cast<int>(options.devices.size()) != size) {
    throw Error(ErrorKind::kInvalidArgument, "an in-process world of " + std::to_string(size) + " ranks was given " +
                                                 std::to_string(options.devices.size()) + " devices");
  }
  const int local_size = options.ranks_per_node > 0 ? options.ranks_per_node : size;
  if (size % local_size != 0) {
    throw Error(ErrorKind::kInvalidArgument, std::to_string(size) + " ranks do not fill nodes of " +
                                                 std::to_string(local_size) + " ranks each");
  }
  InProcessGroupOptions group;
  group.timeout = options.timeout;
  std::vector<std::shared_ptr<Communicator>> communicators = make_in_process_group(size, group);
  std::vector<std::shared_ptr<World>> worlds;
  for (int r = 0; r < size; ++r) {
    Device device = options.devices.empty() ? Device::cpu(r) : options.devices[static_cast<size_t>(r)];
    std::shared_ptr<World> world = std::make_shared<InProcessWorld>(communicators[static_cast<size_t>(r)], local_size, device);
    worlds.push_back(options.wrap ? options.wrap(std::move(world)) : std::move(world));
  }
  return worlds;
}

}  // namespace weir
