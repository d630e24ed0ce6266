// The device side of the CUDA LocalSGD kernels (local_sgd_device.cu):
// ops/optimizer/local_sgd.h's schedule, advance and average with the
// schedule, the step, the flag, the loss and lr read and written on the
// device, so that a whole LocalSGD step stays in stream order on the GPU
// (only the AllReduce's skip flag is read by the host, as every collective
// reads it). Each is the CPU kernel's arithmetic: the schedule and the
// averaged parameters equal the CPU's bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/device_scalar.h"

namespace weir::cuda {

// *communicate = local_sgd_communicates(step, schedule[0], schedule[1],
// begin_step); *seen_step = the step read, for the caller's check that it
// is at least 1.
void launch_local_sgd_schedule(const double* schedule, DeviceScalar step, int64_t begin_step, bool* communicate,
                               int64_t* seen_step, cudaStream_t stream);

// When *communicated: (adaptive) on the first average schedule[2..3] =
// (loss, lr), and schedule[1] = adaptive_local_sgd_steps(...) (at most
// max_k_steps); then schedule[0] = step. *seen_step as above. `loss` and
// `lr` are read only when adaptive.
void launch_local_sgd_advance(double* schedule, DeviceScalar step, const bool* communicated, bool adaptive,
                              int64_t init_k_steps, int64_t max_k_steps, DeviceScalar loss, DeviceScalar lr,
                              int64_t* seen_step, cudaStream_t stream);

// When *communicate: snapshot[i] = param[i] = snapshot[i] - averaged_delta[i]
// for i < count (count > 0).
void launch_local_sgd_average(float* param, float* snapshot, const float* averaged_delta, int64_t count,
                              const bool* communicate, cudaStream_t stream);

}  // namespace weir::cuda
