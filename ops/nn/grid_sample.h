// GridSample (ONNX opset 16, PyTorch's grid_sample semantics) and its
// backward op GridSampleGrad: schemas, gradient rule and CPU kernels.
//
// GridSample(X [N, C, H, W], grid [N, Ho, Wo, 2]) -> Y [N, C, Ho, Wo]: each
// output location reads X at grid[n, ho, wo] = (x, y), normalized so that -1
// and 1 are the centres of the corner pixels (align_corners=1) or their outer
// edges (0): pixel x = (x + 1) / 2 * (W - 1), or ((x + 1) W - 1) / 2.
// mode bilinear (4 taps), nearest (rounding halves to even) or bicubic (4x4
// taps, cubic convolution with a = -0.75). padding_mode zeros reads 0 outside
// X; border clamps the coordinate into [0, W - 1]; reflection reflects it at
// the border (the corner centres with align_corners, the outer edges
// without) until it lies inside, then clamps. Bicubic pads each tap's
// position instead of the sample coordinate, as PyTorch does. A non-finite
// coordinate reads nothing (0).
//
// GridSampleGrad(dY, X, grid) -> (dX, dGrid) is its gradient: dY spread over
// the taps each output read, and the derivative of the tap weights along the
// grid (zero for nearest, and where border/reflection clamp). Computed in f64.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_grid_sample_schemas(OpRegistry& registry);
void register_grid_sample_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
