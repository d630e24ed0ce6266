// The device side of the CUDA optimizer kernels (optimizer_device.cu):
// launchers with plain arguments; the OpKernels are optimizer_kernels.cc.
//
// Every update is a multi-tensor launch (multi_tensor.h): it takes a list
// of parameters that share the rule, the hyperparameters, lr, step and skip,
// and updates them all in one launch (several only past 24 tensors or 320
// chunks). Weir's update nodes hold one parameter each, so the kernels pass
// a list of one; a fused update of many parameters calls the same launcher.
//
// lr, step and skip are read ON THE DEVICE from their tensors (no host round
// trip), by every block, so a schedule or a loss-scaling skip computed on
// the GPU feeds the update in stream order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda/device_scalar.h"
#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

enum class UpdateRule { kSgd, kMomentum, kAdagrad, kAdam, kAdamW, kLamb };

struct UpdateHyperparameters {
  double weight_decay = 0, momentum = 0.9;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
};

// One parameter of f32 and its gradient and state (state0: velocity,
// accumulator or m; state1: v), all `count` elements, distinct buffers.
struct ParameterRefs {
  float* param = nullptr;
  const float* grad = nullptr;
  float* state0 = nullptr;
  float* state1 = nullptr;
  int64_t count = 0;
};

// f64 values of workspace LAMB needs for `tensors` (per-chunk partial norms
// and per-tensor trust ratios); 0 for the other rules.
size_t update_workspace_doubles(UpdateRule rule, const ParameterRefs* tensors, int num_tensors);

// Updates every tensor in place. `step` is read for the Adam family only;
// when `skip` (a device bool) is true nothing changes. A step below 1 (the
// CPU kernel's error) also leaves everything unchanged: the device cannot
// fail the node, and an unchanged parameter is recoverable where one
// divided by a zero bias correction is not.
void launch_update(UpdateRule rule, const UpdateHyperparameters& hyper, const ParameterRefs* tensors, int num_tensors,
                   DeviceScalar lr, DeviceScalar step, const bool* skip, double* workspace, cudaStream_t stream);

// ClipByGlobalNorm: norm = sqrt(sum of squares of every gradient) in f64;
// out = in * (norm > max_norm ? max_norm / norm : 1), and the norm stored
// to `norm_out` (one element of `type`). grads[i] and outs[i] hold counts[i]
// elements of `type`.
size_t clip_workspace_doubles(const int64_t* counts, int num_tensors);
void launch_clip_by_global_norm(ElementType type, const void* const* grads, void* const* outs, const int64_t* counts,
                                int num_tensors, double max_norm, void* norm_out, double* workspace,
                                cudaStream_t stream);

}  // namespace weir::cuda
