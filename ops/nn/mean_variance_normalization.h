// MeanVarianceNormalization (ONNX opset 13): schema, gradient rule and CPU
// kernels.
//
// Y = (X - mean) / (sqrt(variance) + 1e-9), mean and (population) variance
// taken over `axes` (default [0, 2, 3]), the epsilon added to the standard
// deviation as ONNX's function body does. The variance is computed in f64
// from the mean (two passes), so it is never negative. The gradient rule
// emits MeanVarianceNormalizationGrad(dY, X) with the node's axes.
//
//   register_mean_variance_normalization_schema(op_registry);
//   register_mean_variance_normalization_cpu_kernel(kernel_registry);
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_mean_variance_normalization_schema(OpRegistry& registry);
void register_mean_variance_normalization_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
