// The device side of the CUDA GradientMerge kernel
// (gradient_merge_device.cu): ops/optimizer/gradient_merge.h's rule with
// the apply flag read on the device, so a flag computed on the GPU from the
// step number feeds the merge in stream order without a round trip.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace weir::cuda {

// For i < count (count > 0): *apply ? (merged[i] = (accumulator[i] +
// grad[i]) * scale, accumulator[i] = 0) : (merged[i] = accumulator[i] +=
// grad[i]), each operation rounded to f32 as the CPU rounds it.
void launch_gradient_merge(float* accumulator, const float* grad, float* merged, int64_t count, const bool* apply,
                           float scale, cudaStream_t stream);

}  // namespace weir::cuda
