#include "distributed/metered_world.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/error.h"
#include "distributed/collective_cost.h"

namespace weir {

namespace {

// A number that is all of `text`, or NaN.
double whole_number(const std::string& text) {
  if (text.empty()) return std::nan("");
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() ? value : std::nan("");
}

class MeteredCommunicator final : public Communicator {
 public:
  MeteredCommunicator(std::shared_ptr<Communicator> inner, std::shared_ptr<CommunicationMeter> meter, SimulatedLink link)
      : inner_(std::move(inner)), meter_(std::move(meter)), link_(link) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string description() const override { return inner_->description(); }

  void all_reduce(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    metered("AllReduce", input.nbytes(), [&] { inner_->all_reduce(input, output, op, call); });
  }
  void broadcast(const Tensor& input, Tensor& output, int root, const CommCall& call) override {
    metered("Broadcast", input.nbytes(), [&] { inner_->broadcast(input, output, root, call); });
  }
  void all_gather(const Tensor& input, Tensor& output, const CommCall& call) override {
    metered("AllGather", input.nbytes(), [&] { inner_->all_gather(input, output, call); });
  }
  void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op, const CommCall& call) override {
    metered("ReduceScatter", input.nbytes(), [&] { inner_->reduce_scatter(input, output, op, call); });
  }
  void send(const Tensor& tensor, int peer, const CommCall& call) override {
    point_to_point(tensor.nbytes(), true, [&] { inner_->send(tensor, peer, call); });
  }
  void recv(Tensor& tensor, int peer, const CommCall& call) override {
    point_to_point(tensor.nbytes(), false, [&] { inner_->recv(tensor, peer, call); });
  }
  void barrier(const CommCall& call) override {
    // A zero-byte allreduce: its messages' latency, no bytes.
    metered("AllReduce", 0, [&] { inner_->barrier(call); });
  }

  std::shared_ptr<Communicator> subgroup(const std::vector<int>& ranks) override {
    return std::make_shared<MeteredCommunicator>(inner_->subgroup(ranks), meter_, link_);
  }
  void abort(const std::string& reason) override { inner_->abort(reason); }
  std::string abort_reason() const override { return inner_->abort_reason(); }

 private:
  template <typename Call>
  void metered(const char* op, int64_t bytes, Call&& call) {
    const LinkModel model = link_model();
    const CollectiveCost cost = collective_cost(op, size(), bytes, model);
    run(cost.sent_bytes, cost.messages, simulating() ? cost.seconds : 0, call);
  }

  template <typename Call>
  void point_to_point(int64_t bytes, bool sending, Call&& call) {
    const LinkModel model = link_model();
    const double seconds = simulating() ? model.latency_seconds + static_cast<double>(bytes) / model.bytes_per_second : 0;
    run(sending ? bytes : 0, sending ? 1 : 0, seconds, call);
  }

  template <typename Call>
  void run(int64_t sent_bytes, int64_t messages, double simulated_seconds, Call&& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    meter_->record(sent_bytes, messages, simulated_seconds);
    if (simulated_seconds > 0) {
      // The link is slower than the real one: wait out the difference.
      const auto until = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(simulated_seconds));
      std::this_thread::sleep_until(until);
    }
  }

  bool simulating() const { return link_.gigabits_per_second > 0; }
  LinkModel link_model() const {
    // collective_cost wants a bandwidth even when only counting.
    return {.latency_seconds = link_.latency_us * 1e-6,
            .bytes_per_second = simulating() ? link_.gigabits_per_second * 1e9 / 8 : 1.0};
  }

  std::shared_ptr<Communicator> inner_;
  std::shared_ptr<CommunicationMeter> meter_;
  SimulatedLink link_;
};

class MeteredWorld final : public World {
 public:
  MeteredWorld(std::shared_ptr<World> inner, std::shared_ptr<CommunicationMeter> meter, SimulatedLink link)
      : inner_(std::move(inner)), communicator_(std::make_shared<MeteredCommunicator>(inner_->communicator(), meter, link)) {}

  int size() const override { return inner_->size(); }
  int rank() const override { return inner_->rank(); }
  int local_size() const override { return inner_->local_size(); }
  int local_rank() const override { return inner_->local_rank(); }
  Device device() const override { return inner_->device(); }
  std::string description() const override { return inner_->description(); }
  std::shared_ptr<Communicator> communicator() override { return communicator_; }
  void abort(const std::string& reason) override { inner_->abort(reason); }

 private:
  std::shared_ptr<World> inner_;
  std::shared_ptr<Communicator> communicator_;
};

}  // namespace

SimulatedLink parse_simulated_link(const std::string& text) {
  const size_t comma = text.find(',');
  SimulatedLink link;
  link.gigabits_per_second = whole_number(text.substr(0, comma));
  if (comma != std::string::npos) link.latency_us = whole_number(text.substr(comma + 1));
  if (!(link.gigabits_per_second > 0) || !std::isfinite(link.gigabits_per_second) || !(link.latency_us >= 0) ||
      !std::isfinite(link.latency_us)) {
    throw Error(ErrorKind::kInvalidArgument, "--simulate-link '" + text +
                                                 "': expected GBPS[,LATENCY_US], a bandwidth in Gbit/s above 0 and "
                                                 "optionally a latency per message in microseconds, e.g. 1 or 10,50");
  }
  return link;
}

std::string describe(const SimulatedLink& link) {
  char text[96];
  std::snprintf(text, sizeof text, "%g Gbit/s, %g us per message", link.gigabits_per_second, link.latency_us);
  return text;
}

void CommunicationMeter::record(int64_t sent_bytes, int64_t messages, double simulated_seconds) {
  sent_bytes_ += sent_bytes;
  messages_ += messages;
  calls_ += 1;
  simulated_ns_ += static_cast<int64_t>(simulated_seconds * 1e9);
}

std::shared_ptr<World> metered_world(std::shared_ptr<World> inner, std::shared_ptr<CommunicationMeter> meter,
                                     const SimulatedLink& link) {
  if (inner == nullptr || meter == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "metered_world needs a world and a meter");
  }
  if (link.gigabits_per_second < 0 || link.latency_us < 0) {
    throw Error(ErrorKind::kInvalidArgument, "metered_world: a simulated link needs a bandwidth >= 0 and a latency >= 0");
  }
  return std::make_shared<MeteredWorld>(std::move(inner), std::move(meter), link);
}

}  // namespace weir
