// NonMaxSuppression (ONNX opset 11): schema and CPU kernel.
//
// NonMaxSuppression(boxes [batches, boxes, 4], scores [batches, classes,
// boxes], max_output_boxes_per_class?, iou_threshold?, score_threshold?)
// -> selected_indices [selected, 3] int64 of (batch, class, box). For each
// batch and class, boxes whose score is above score_threshold (all, when it
// is absent; NaN scores never) are visited by descending score, ties by
// ascending index, and a box is selected unless its intersection over union
// with an already selected box exceeds iou_threshold (default 0; it must lie
// in [0, 1]), until max_output_boxes_per_class (absent or 0: none) are
// selected. Boxes are corners [y1, x1, y2, x2] in either order
// (center_point_box 0) or [x_center, y_center, width, height] (1); a box of
// no area overlaps nothing.
// Rows come batch by batch, class by class, each in selection order. The
// count is only known at run time: inference gives [symbol, 3].
// Coordinates and IoU are computed in f64.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_non_max_suppression_schema(OpRegistry& registry);
void register_non_max_suppression_cpu_kernel(KernelRegistry& registry);

}  // namespace weir
