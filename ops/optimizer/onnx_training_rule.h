// Which update an ONNX training-preview optimizer node makes (Adagrad, Adam,
// Momentum). Alone in this header, without includes, because the CUDA
// kernels' device code (ops/cuda/onnx_training_device.h) uses it too.
#pragma once

namespace weir {

enum class OnnxTrainingRule { kAdagrad, kAdam, kMomentum };

}  // namespace weir
