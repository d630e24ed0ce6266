// The mean and reciprocal standard deviation of one contiguous row, for
// device code: the block that owns the row sums it two-pass (the mean, then
// the squared deviations from it) in f32, as the normalization kernels
// (LayerNormalization, InstanceNormalization) need it. Deterministic: the
// order of the additions depends only on blockDim.
#pragma once

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/device_elements.cuh"

namespace weir::cuda {

// (mean, 1 / sqrt(variance + epsilon)) of in[0, len), the biased variance;
// every thread of the block gets both. All threads of the block must call it.
template <typename T>
__device__ float2 row_statistics(const T* in, int64_t len, float epsilon) {
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += load(in[j]);
  const float mean = block_reduce<SumOp>(sum) / static_cast<float>(len);
  float squares = 0.0f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float d = load(in[j]) - mean;
    squares += d * d;
  }
  const float variance = block_reduce<SumOp>(squares) / static_cast<float>(len);
  return make_float2(mean, 1.0f / sqrtf(variance + epsilon));
}

}  // namespace weir::cuda
