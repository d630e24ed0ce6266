#include "ops/cuda/loss_scaling_device.h"

#include <vector>

#include "ops/cuda/device_elements.cuh"
#include "ops/cuda/multi_tensor.h"

namespace weir::cuda {

namespace {

constexpr int kThreads = 256;

// Initializes found_inf: true only when the scale is unusable.
__global__ void check_loss_scale(const float* scale, bool* found_inf) {
  const double s = *scale;
  *found_inf = !(s > 0) || !isfinite(s);
}

template <typename T>
__global__ void unscale_chunks(TensorListBatch<2> batch, const float* scale, bool* found_inf) {
  // The CPU's factor: 1 / scale in f64, rounded to the compute type.
  const float factor = static_cast<float>(__ddiv_rn(1.0, static_cast<double>(*scale)));
  const int slot = batch.block_tensor[blockIdx.x];
  const int64_t begin = static_cast<int64_t>(batch.block_chunk[blockIdx.x]) * kListChunk;
  const int64_t end = begin + kListChunk < batch.count[slot] ? begin + kListChunk : batch.count[slot];
  const T* in = static_cast<const T*>(batch.data[0][slot]);
  T* out = static_cast<T*>(batch.data[1][slot]);
  bool bad = false;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float v = load(in[i]);
    // v - v is NaN exactly when v is Inf or NaN.
    bad |= __fsub_rn(v, v) != __fsub_rn(v, v);
    out[i] = store<T>(__fmul_rn(v, factor));
  }
  // Only ever set to true, so concurrent blocks need no ordering.
  if (__syncthreads_or(bad) && threadIdx.x == 0) *found_inf = true;
}

template <typename T>
void unscale_as(const float* scale, const void* const* grads, void* const* outs, const int64_t* counts, int num_tensors,
                bool* found_inf, cudaStream_t stream) {
  std::vector<TensorRefs<2>> refs(static_cast<size_t>(num_tensors));
  for (int t = 0; t < num_tensors; ++t) refs[static_cast<size_t>(t)] = {{const_cast<void*>(grads[t]), outs[t]}, counts[t]};
  launch_in_batches<2>(refs.data(), num_tensors, [&](const TensorListBatch<2>& batch) {
    unscale_chunks<T><<<batch.blocks, kThreads, 0, stream>>>(batch, scale, found_inf);
  });
}

__global__ void update_loss_scale(LossScaleSchedule schedule, float* scale, int64_t* good_steps, const bool* found_inf) {
  const double s = *scale;
  if (*found_inf) {
    const double backed_off = __dmul_rn(s, schedule.backoff_factor);
    *scale = static_cast<float>(schedule.min_scale < backed_off ? backed_off : schedule.min_scale);  // std::max
    *good_steps = 0;
  } else if (++*good_steps >= schedule.growth_interval) {
    const double grown = __dmul_rn(s, schedule.growth_factor);
    *scale = static_cast<float>(grown < schedule.max_scale ? grown : schedule.max_scale);  // std::min
    *good_steps = 0;
  }
}

}  // namespace

void launch_unscale_gradients(ElementType type, const float* scale, const void* const* grads, void* const* outs,
                              const int64_t* counts, int num_tensors, bool* found_inf, cudaStream_t stream) {
  check_loss_scale<<<1, 1, 0, stream>>>(scale, found_inf);
  switch (type) {
    case ElementType::kFloat32: return unscale_as<float>(scale, grads, outs, counts, num_tensors, found_inf, stream);
    case ElementType::kFloat16: return unscale_as<__half>(scale, grads, outs, counts, num_tensors, found_inf, stream);
    case ElementType::kBFloat16:
      return unscale_as<__nv_bfloat16>(scale, grads, outs, counts, num_tensors, found_inf, stream);
  }
}

void launch_update_loss_scale(const LossScaleSchedule& schedule, float* scale, int64_t* good_steps, const bool* found_inf,
                              cudaStream_t stream) {
  update_loss_scale<<<1, 1, 0, stream>>>(schedule, scale, good_steps, found_inf);
}

}  // namespace weir::cuda
