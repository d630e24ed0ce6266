#include "ops/cuda/local_sgd_device.h"

#include "ops/cuda/device_scalar.cuh"
#include "ops/cuda/launch_shape.cuh"
#include "ops/cuda/rounded_arithmetic.cuh"

namespace weir::cuda {

namespace {

__device__ int64_t read_step(DeviceScalar step, int64_t* seen_step) {
  const int64_t value = step.type == ScalarType::kInt64 ? *static_cast<const int64_t*>(step.data)
                                                        : *static_cast<const int32_t*>(step.data);
  *seen_step = value;
  return value;
}

__global__ void local_sgd_schedule(const double* schedule, DeviceScalar step_in, int64_t begin_step, bool* communicate,
                                   int64_t* seen_step) {
  const int64_t step = read_step(step_in, seen_step);
  const int64_t last = static_cast<int64_t>(schedule[0]);
  const int64_t k = static_cast<int64_t>(schedule[1]);
  *communicate = step <= (begin_step > 1 ? begin_step : 1) || step - last >= (k > 1 ? k : 1);
}

// adaptive_local_sgd_steps() of ops/optimizer/local_sgd.cc, operation for operation.
__device__ int64_t adaptive_steps(double loss0, double lr0, double loss, double lr, int64_t init_k_steps,
                                  int64_t current_k_steps, double max_k_steps) {
  const double ratio = ddiv(dmul(lr0, loss), dmul(lr, loss0));
  if (!(loss0 > 0) || !(lr0 > 0) || !(loss > 0) || !(lr > 0) || !isfinite(ratio)) return current_k_steps;
  const double k = ceil(__dsqrt_rn(dmul(ratio, static_cast<double>(init_k_steps))));
  return static_cast<int64_t>(k < 1.0 ? 1.0 : (k > max_k_steps ? max_k_steps : k));
}

__global__ void local_sgd_advance(double* schedule, DeviceScalar step_in, const bool* communicated, bool adaptive,
                                  int64_t init_k_steps, int64_t max_k_steps, DeviceScalar loss_in, DeviceScalar lr_in,
                                  int64_t* seen_step) {
  const int64_t step = read_step(step_in, seen_step);
  if (!*communicated) return;
  if (adaptive) {
    const double loss = read_scalar(loss_in), lr = read_scalar(lr_in);
    if (schedule[0] == 0) {  // the first average: the reference loss and learning rate
      schedule[2] = loss;
      schedule[3] = lr;
    }
    schedule[1] = static_cast<double>(
        adaptive_steps(schedule[2], schedule[3], loss, lr, init_k_steps, static_cast<int64_t>(schedule[1]),
                       static_cast<double>(max_k_steps)));
  }
  schedule[0] = static_cast<double>(step);
}

__global__ void local_sgd_average(float* param, float* snapshot, const float* averaged_delta, int64_t count,
                                  const bool* communicate) {
  if (!*communicate) return;
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const float averaged = fsub(snapshot[i], averaged_delta[i]);
    param[i] = averaged;
    snapshot[i] = averaged;
  }
}

}  // namespace

void launch_local_sgd_schedule(const double* schedule, DeviceScalar step, int64_t begin_step, bool* communicate,
                               int64_t* seen_step, cudaStream_t stream) {
  local_sgd_schedule<<<1, 1, 0, stream>>>(schedule, step, begin_step, communicate, seen_step);
}

void launch_local_sgd_advance(double* schedule, DeviceScalar step, const bool* communicated, bool adaptive,
                              int64_t init_k_steps, int64_t max_k_steps, DeviceScalar loss, DeviceScalar lr,
                              int64_t* seen_step, cudaStream_t stream) {
  local_sgd_advance<<<1, 1, 0, stream>>>(schedule, step, communicated, adaptive, init_k_steps, max_k_steps, loss, lr,
                                         seen_step);
}

void launch_local_sgd_average(float* param, float* snapshot, const float* averaged_delta, int64_t count,
                              const bool* communicate, cudaStream_t stream) {
  local_sgd_average<<<blocks_for(count), kThreads, 0, stream>>>(param, snapshot, averaged_delta, count, communicate);
}

}  // namespace weir::cuda
