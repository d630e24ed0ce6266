// Learning-rate schedules, evaluated on the host each step and fed to the
// training graph's scalar "lr" input (the graph itself never changes).
//
//   auto lr = weir::LrSchedule::cosine(1e-3, /*total_steps=*/1000, /*min_lr=*/1e-5)
//                 .with_warmup(/*steps=*/100);
//   double rate = lr.at(step);   // step counts from 1
#pragma once

#include <cstdint>

namespace weir {

class LrSchedule {
 public:
  static LrSchedule constant(double lr);
  // lr * gamma^floor((step - 1) / every)
  static LrSchedule step_decay(double lr, int64_t every, double gamma);
  // Cosine from lr (step 1) down to min_lr (step total_steps and after).
  static LrSchedule cosine(double lr, int64_t total_steps, double min_lr = 0.0);
  // The first `steps` steps ramp linearly from lr/steps up to this schedule's rate.
  LrSchedule with_warmup(int64_t steps) const;

  double at(int64_t step) const;

 private:
  enum class Kind { kConstant, kStep, kCosine };
  Kind kind_ = Kind::kConstant;
  double lr_ = 1e-3;
  int64_t every_ = 1;
  double gamma_ = 1.0;
  int64_t total_ = 1;
  double min_lr_ = 0.0;
  int64_t warmup_ = 0;
};

}  // namespace weir
