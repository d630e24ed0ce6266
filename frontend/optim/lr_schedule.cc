#include "frontend/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace weir {

LrSchedule LrSchedule::constant(double lr) {
  LrSchedule s;
  s.lr_ = lr;
  return s;
}

LrSchedule LrSchedule::step_decay(double lr, int64_t every, double gamma) {
  LrSchedule s = constant(lr);
  s.kind_ = Kind::kStep;
  s.every_ = std::max<int64_t>(every, 1);
  s.gamma_ = gamma;
  return s;
}

LrSchedule LrSchedule::cosine(double lr, int64_t total_steps, double min_lr) {
  LrSchedule s = constant(lr);
  s.kind_ = Kind::kCosine;
  s.total_ = std::max<int64_t>(total_steps, 1);
  s.min_lr_ = min_lr;
  return s;
}

LrSchedule LrSchedule::with_warmup(int64_t steps) const {
  LrSchedule s = *this;
  s.warmup_ = std::max<int64_t>(steps, 0);
  return s;
}

double LrSchedule::at(int64_t step) const {
  step = std::max<int64_t>(step, 1);
  double rate = lr_;
  switch (kind_) {
    case Kind::kConstant: break;
    case Kind::kStep: rate = lr_ * std::pow(gamma_, static_cast<double>((step - 1) / every_)); break;
    case Kind::kCosine: {
      double progress = std::min(1.0, static_cast<double>(step - 1) / static_cast<double>(std::max<int64_t>(total_ - 1, 1)));
      rate = min_lr_ + 0.5 * (lr_ - min_lr_) * (1.0 + std::cos(M_PI * progress));
      break;
    }
  }
  if (step <= warmup_) rate *= static_cast<double>(step) / static_cast<double>(warmup_);
  return rate;
}

}  // namespace weir
