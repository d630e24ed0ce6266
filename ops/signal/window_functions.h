// HannWindow, HammingWindow, BlackmanWindow (ONNX opset 17): schemas and CPU
// kernels.
//
// Each takes a scalar `size` (i32 or i64) and returns the [size] window
// w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), with N = size when
// `periodic` (the default: the first size points of a size + 1 symmetric
// window) and N = size - 1 otherwise; Hann a0 = a1 = 0.5, a2 = 0; Hamming
// a0 = 25/46, a1 = 21/46, a2 = 0; Blackman a0 = 0.42, a1 = 0.5, a2 = 0.08.
// A symmetric window of one point is [1] (as NumPy and PyTorch give; the
// formula divides by zero there). Computed in f64 and stored as
// `output_datatype` (an ONNX TensorProto code, f32 by default).
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_window_function_schemas(OpRegistry& registry);
void register_window_function_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
