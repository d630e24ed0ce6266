// RoiAlign (ONNX opset 16): schema and CPU kernel.
//
// RoiAlign(X [N, C, H, W], rois [R, 4], batch_indices [R]) -> Y [R, C,
// output_height, output_width]. Roi r = (x1, y1, x2, y2) of image
// batch_indices[r], times spatial_scale (minus 0.5 with
// coordinate_transformation_mode half_pixel; at least 1 pixel tall and wide
// with output_half_pixel), is cut into output_height x output_width bins;
// each bin samples a grid of sampling_ratio x sampling_ratio points (0:
// ceil(roi size / output size) per axis) at the sub-cell centres, each
// bilinearly interpolated (a point more than one pixel outside X reads 0; one
// within clamps to the edge). mode avg averages the samples; max takes the
// largest of the samples' largest weighted corner value (as the ONNX reference
// and ONNX Runtime do). Computed in f64. No gradient rule.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_roi_align_schema(OpRegistry& registry);
void register_roi_align_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
