// UpdateLossScale's schedule: its attributes, as the CPU kernel
// (loss_scaling.cc) and the CUDA kernel's device code
// (ops/cuda/loss_scaling_device.h) both use them. Alone in this header, with
// nothing but <cstdint>, so that device code can include it.
#pragma once

#include <cstdint>

namespace weir {

struct LossScaleSchedule {
  double growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  double min_scale = 1.0, max_scale = 16777216.0;
};

}  // namespace weir
