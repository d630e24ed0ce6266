// Resize (ONNX opset 13 semantics, as the ONNX reference implementation
// computes them) and its backward op ResizeGrad: schemas, gradient rule and
// CPU kernels.
//
// Resize(X, roi?, scales?, sizes?) -> Y. The output size comes from `sizes`
// when given (non-empty), else floor(size * scale). Each axis maps an output
// coordinate back to the input through coordinate_transformation_mode
// (half_pixel, pytorch_half_pixel, align_corners, asymmetric,
// tf_half_pixel_for_nn, tf_crop_and_resize with `roi`) and interpolates:
// mode nearest (nearest_mode round_prefer_floor / round_prefer_ceil / floor
// / ceil), linear (2 taps per axis: bilinear, trilinear...) or cubic (4 taps,
// cubic_coeff_a, exclude_outside). Interpolation is separable, so the kernel
// resizes one axis at a time; ResizeGrad runs the transposed passes in
// reverse. Taps past the border read the edge element.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_resize_schemas(OpRegistry& registry);
void register_resize_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
