// Margin logits of large-scale classification (ArcFace, Deng et al. CVPR
// 2019; CosFace, Wang et al. CVPR 2018; the combined form of InsightFace
// and PLSC): the cosines between L2-normalised features and class centres
// become scaled logits, the labelled class's pushed down by a margin.
//
//   MarginLogits(cosine [B, C], labels [B]) -> logits [B, C]
//     logits[b, j]        = s * cosine[b, j]                          j != labels[b]
//     logits[b, label]    = s * (cos(m1 * theta + m2) - m3),  theta = acos(cosine[b, label])
//
//   ArcFace: m1 = 1, m2 = 0.5, m3 = 0 (s = 64); CosFace: m1 = 1, m2 = 0,
//   m3 = 0.35 to 0.4; m1 = 1, m2 = m3 = 0 is the plain scaled softmax.
//
// `cosine` may be one rank's shard of the classes (the model-parallel head):
// a label is then a column of the shard, or -1 when another rank owns the
// class (no margin in this shard's row). Labels outside [-1, C) fail naming
// the row. The cosine is clamped to [-1, 1] before acos. Where m1 * theta +
// m2 passes pi (m2 > 0) the margin would make the target logit rise again
// as theta grows, pushing features away from their class; there the target
// is s * (cos(theta) - m3 - m2 * sin(m2)) (InsightFace's fallback).
//
// Gradient (MarginLogitsGrad(dY, cosine, labels) -> dCosine): s * dY, and at
// the label s * dY * m1 * sin(m1 * theta + m2) / sin(theta), sin(theta)
// kept at least 1e-6 (the margin's derivative is unbounded as the cosine
// reaches +-1); exactly s * dY there when m1 = 1 and m2 = 0, and past pi.
#pragma once

#include "core/op_schema.h"
#include "ops/kernel.h"

namespace weir {

void register_margin_logits_schemas(OpRegistry& registry);
void register_margin_logits_cpu_kernels(KernelRegistry& registry);

}  // namespace weir
