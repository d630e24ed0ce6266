#include "tools/graph-runner/step_communication.h"

#include <cstdio>

namespace weir::tools {

std::shared_ptr<World> StepCommunication::wrap(std::shared_ptr<World> world) {
  auto meter = std::make_shared<CommunicationMeter>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (reported_ == nullptr || world->rank() == 0) reported_ = meter;
  }
  return metered_world(std::move(world), std::move(meter), link_);
}

void StepCommunication::start() {
  if (reported_ == nullptr) return;
  last_bytes_ = reported_->sent_bytes();
  first_messages_ = reported_->messages();
}

void StepCommunication::record_step() {
  if (reported_ == nullptr) return;
  const int64_t now = reported_->sent_bytes();
  step_bytes_.push_back(now - last_bytes_);
  last_bytes_ = now;
}

void StepCommunication::report(bool each_step, int64_t first_step) const {
  if (reported_ == nullptr || step_bytes_.empty()) return;
  if (each_step) {
    for (size_t i = 0; i < step_bytes_.size(); ++i) {
      std::printf("step %lld bytes_sent: %lld\n", static_cast<long long>(first_step + static_cast<int64_t>(i)),
                  static_cast<long long>(step_bytes_[i]));
    }
  }
  int64_t total = 0;
  for (int64_t bytes : step_bytes_) total += bytes;
  const double steps = static_cast<double>(step_bytes_.size());
  if (link_.gigabits_per_second > 0) std::printf("simulated link: %s\n", describe(link_).c_str());
  std::printf("bytes_sent_per_step: %.0f\n", static_cast<double>(total) / steps);
  std::printf("bytes_sent_last_step: %lld\n", static_cast<long long>(step_bytes_.back()));
  std::printf("messages_per_step: %.1f\n", static_cast<double>(reported_->messages() - first_messages_) / steps);
}

}  // namespace weir::tools
