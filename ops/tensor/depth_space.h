// DepthToSpace and SpaceToDepth (ONNX opset 13): schemas, gradient rules
// and CPU kernels.
//
// Both move data between the channel axis and blocks of the two spatial
// axes of a 4-D [N, C, H, W] tensor, with block size b:
//   DepthToSpace: [N, C * b * b, H, W] -> [N, C, H * b, W * b], the depth
//     channel of space element (c, h * b + i, w * b + j) being
//     (i * b + j) * C + c in mode DCR (the default), c * b * b + i * b + j in CRD;
//   SpaceToDepth: the inverse of DepthToSpace in mode DCR.
// Each gradient is the inverse rearrangement: SpaceToDepth's is
// DepthToSpace (DCR) of dY, DepthToSpace's is DepthToSpaceGrad(dY), a
// space-to-depth in the node's mode. Any dtype; the kernels copy elements.
//
//   register_depth_space_schemas(op_registry);
//   register_depth_space_cpu_kernels(kernel_registry);
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_depth_space_schemas(OpRegistry& registry);
void register_depth_space_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
