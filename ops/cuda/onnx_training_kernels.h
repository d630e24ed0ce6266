// CUDA kernels of ONNX's training-preview Adagrad, Adam and Momentum
// (domain ai.onnx.preview.training; f32 or f64 tensors, R f32 or f64, T
// i64): the semantics of ops/optimizer/onnx_training_ops.h, every optimized
// tensor of a node updated by one multi-tensor launch, R and T read on the
// device.
#pragma once

#include "ops/kernel.h"

namespace weir {

void register_onnx_training_cuda_kernels(KernelRegistry& registry);

}  // namespace weir
