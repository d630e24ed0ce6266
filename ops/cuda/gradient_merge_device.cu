#include "ops/cuda/gradient_merge_device.h"

#include "ops/cuda/launch_shape.cuh"
#include "ops/cuda/rounded_arithmetic.cuh"

namespace weir::cuda {

namespace {

__global__ void gradient_merge_elements(float* accumulator, const float* grad, float* merged, int64_t count,
                                        const bool* apply, float scale) {
  const bool applying = *apply;
  for (int64_t i = global_index(); i < count; i += grid_stride()) {
    const float sum = fadd(accumulator[i], grad[i]);
    if (applying) {
      merged[i] = fmul(sum, scale);
      accumulator[i] = 0.0f;
    } else {
      accumulator[i] = sum;
      merged[i] = sum;
    }
  }
}

}  // namespace

void launch_gradient_merge(float* accumulator, const float* grad, float* merged, int64_t count, const bool* apply,
                           float scale, cudaStream_t stream) {
  gradient_merge_elements<<<blocks_for(count), kThreads, 0, stream>>>(accumulator, grad, merged, count, apply, scale);
}

}  // namespace weir::cuda
