// The device side of the CUDA kernels of ONNX's training-preview Adagrad,
// Adam and Momentum (onnx_training_device.cu; the OpKernels are
// onnx_training_kernels.cc): one node updates n tensors, out of place, and
// all n go through ONE multi-tensor launch (multi_tensor.h). R and T are
// read on the device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/optimizer_device.h"
#include "ops/optimizer/onnx_training_rule.h"

namespace weir::cuda {

using weir::OnnxTrainingRule;  // ops/optimizer/onnx_training_rule.h

struct OnnxTrainingHyperparameters {
  double norm_coefficient = 0, norm_coefficient_post = 0, epsilon = 1e-6, decay_factor = 0, alpha = 0.9, beta = 0.999;
  bool nesterov = false;
};

// One optimized tensor: X, G and the state (state0: Adagrad's H, Adam's and
// Momentum's V; state1: Adam's H), and where the new values go (nullptr for
// an output the node does not have). All `count` elements of f32 or f64.
struct OnnxTrainingRefs {
  const void* x = nullptr;
  const void* grad = nullptr;
  const void* state0 = nullptr;
  const void* state1 = nullptr;
  void* x_new = nullptr;
  void* state0_new = nullptr;
  void* state1_new = nullptr;
  int64_t count = 0;
};

// `r`: R (f32 or f64); `t`: T (i64), both device scalars. `f64`: the
// tensors are f64, else f32.
void launch_onnx_training_update(OnnxTrainingRule rule, const OnnxTrainingHyperparameters& hyper, bool f64,
                                 const OnnxTrainingRefs* tensors, int num_tensors, DeviceScalar r, const int64_t* t,
                                 cudaStream_t stream);

}  // namespace weir::cuda
