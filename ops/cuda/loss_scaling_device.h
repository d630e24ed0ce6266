// The device side of the CUDA loss-scaling kernels (loss_scaling_device.cu):
// undoing the loss scale on the gradients with overflow detection, and the
// dynamic scale's state machine, both reading their scalars on the device
// so an fp16 AMP step never waits for the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"
#include "ops/optimizer/loss_scale_schedule.h"

namespace weir::cuda {

// outs[i] = grads[i] * f32(1 / scale) for the counts[i] elements of `type`
// of each gradient, in multi-tensor launches; *found_inf (written first,
// in stream order) becomes true when any gradient holds an Inf or NaN, or
// when the scale itself is not positive and finite (the CPU kernel's error,
// which the device can only report this way).
void launch_unscale_gradients(ElementType type, const float* scale, const void* const* grads, void* const* outs,
                              const int64_t* counts, int num_tensors, bool* found_inf, cudaStream_t stream);

using weir::LossScaleSchedule;  // the attributes, as the CPU kernel reads them

// In place, one thread: on *found_inf scale = max(min_scale, scale *
// backoff) and good_steps = 0; else ++good_steps, and at growth_interval
// scale = min(max_scale, scale * growth) and good_steps = 0.
void launch_update_loss_scale(const LossScaleSchedule& schedule, float* scale, int64_t* good_steps, const bool* found_inf,
                              cudaStream_t stream);

}  // namespace weir::cuda
