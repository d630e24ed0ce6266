// The device side of the CUDA matrix-product kernels (matmul_device.cu):
// what a product needs after cuBLASLt where its epilogues do not compute
// exactly what the CPU does — FusedMatMul's bias and an activation other
// than Relu and the tanh GELU, or any of them into a type the epilogue
// cannot write. Everything computes in f32 and rounds once, on store.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/elementwise_device.h"

namespace weir::cuda {

// FusedActivation's kinds (ops/elementwise/fused_activation.h), with the
// same formulas: alpha is LeakyRelu's slope and Clip's lower bound, beta
// Clip's upper bound.
enum class MatmulActivation { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kTanh, kSilu, kGelu, kGeluTanh };

struct MatmulEpilogue {
  MatmulActivation activation = MatmulActivation::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// y[r, j] = activation(x[r, j] + bias[j]) for r < rows, j < n (rows * n > 0),
// row-major; no bias when `bias` is null. x and y may be the same memory
// (then of one type); the bias is of `bias_type`.
void launch_bias_activation(ElementType x_type, const void* x, ElementType bias_type, const void* bias,
                            ElementType y_type, void* y, int64_t rows, int64_t n, const MatmulEpilogue& epilogue,
                            cudaStream_t stream);

}  // namespace weir::cuda
